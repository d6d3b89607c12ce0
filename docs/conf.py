"""Sphinx configuration: `.venv/bin/sphinx-build -W -b html docs docs/_build/html`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

from aliascheck import __version__  # noqa: E402 - after the path

project = "aliascheck"
author = "aliascheck developers"
copyright = "2026, aliascheck developers"
release = version = __version__

extensions = ["myst_parser", "aliascheck_reference"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links
nitpicky = True  # a reference that resolves to nothing is a warning, and -W makes it an error
smartquotes = False  # "--aliascheck" stays two hyphens, 'a' stays straight

html_theme = "furo"
html_title = f"aliascheck {release}"
