"""Measure aliascheck as installed: with its bytecode written.

pip writes bytecode for a wheel, and an editable install writes it at the first import.
``PYTHONDONTWRITEBYTECODE`` (set on some CI machines, this one included) makes every
process compile aliascheck from source instead, ~0.2-0.3 s per pytest run that no
installed copy pays, and only on the instrumented side of an A/B pair.
"""

from __future__ import annotations

import compileall
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compile_aliascheck() -> None:
    for package in ("aliascheck", "plugins"):
        compileall.compile_dir(str(ROOT / package), quiet=1)
