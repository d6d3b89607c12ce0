"""The Stateful protocol: any class with ``state_dict()`` / ``load_state_dict()``.

Classes cannot be found by protocol without scanning every class, so they are
named: the ini option ``aliascheck_stateful`` lists ``module:Qualname`` lines,
each wrapped with the same handover and re-entry points the torchdata adapter
uses (``reset`` and ``__iter__`` too, where the class defines them).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from aliascheck.errors import UsageError
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import instrument, undo_all

REQUIRES = None


def resolve(spec: str) -> type:
    """``pkg.mod:Outer.Inner`` -> the class, or a UsageError naming what is wrong."""
    module_name, sep, qualname = spec.partition(":")
    if not sep or not module_name or not qualname:
        raise UsageError(f"aliascheck_stateful: {spec!r} is not of the form module:Qualname")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"aliascheck_stateful: cannot import {module_name!r}: {exc}") from None
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(f"aliascheck_stateful: {module_name!r} has no {qualname!r}") from None
    if not isinstance(target, type):
        raise UsageError(f"aliascheck_stateful: {spec!r} is not a class")
    if not any(hasattr(target, name) for name in ("state_dict", "load_state_dict")):
        raise UsageError(f"aliascheck_stateful: {spec!r} has neither state_dict() nor load_state_dict()")
    return target


def watch_class(cls: type) -> Callable[[], None]:
    """Instrument one Stateful class; returns the undo."""
    return instrument(cls, state=("state_dict",), load=("load_state_dict", "reset"), iterate=("__iter__",),
                      init=True)


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    undos = [watch_class(resolve(spec)) for spec in options.stateful]
    return undo_all(undos)
