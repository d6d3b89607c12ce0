"""GitHub workflow annotations: one per bug, at the user's line to change."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .bugs import Bug, Code, in_checkout
from .report import block

LEVELS = {"error": "error", "warning": "warning"}


def lines(bugs: Sequence[Bug], fallback: Callable[[Bug], Code | None] = lambda bug: None) -> list[str]:
    """``::error file=...,line=...,title=...::message`` lines; *fallback* places a bug whose line is not here."""
    out = []
    for bug in bugs:
        code = in_checkout(bug.location) or fallback(bug)
        where = f"file={_property(code.file)},line={code.line}," if code else ""
        title = _property(f"aliascheck {bug.kind}: {bug.gist}")
        out.append(f"::{LEVELS.get(bug.severity, 'notice')} {where}title={title}::{_data(block(bug))}")
    return out


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
