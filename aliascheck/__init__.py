"""aliascheck: find handed-over state that silently changes afterwards.

The public names are imported lazily so that ``import aliascheck`` (which pytest
does for every run once the plugin is installed) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0.dev0"

_LAZY = {
    "fingerprint": "aliascheck.fingerprint",
    "Fingerprint": "aliascheck.fingerprint",
    "register_handler": "aliascheck.fingerprint",
    "diff": "aliascheck.diff",
    "Change": "aliascheck.diff",
    "isolate": "aliascheck.isolation",
    "factory": "aliascheck.build",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'aliascheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
