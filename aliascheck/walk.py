"""The slow path: build a shadow tree object by object, never raising.

Used only when the pickle fast path fails for a value (some part's reduction
raises, or nesting exceeds the recursion limit). It produces the same shadow
shapes the fast path's stream decodes to, so fingerprints made either way can
be diffed against each other; what it cannot read becomes an ``Opaque`` at its
path, and what lies beyond the limits becomes ``Truncated``.
"""

from __future__ import annotations

import copyreg
from typing import Any

import aliascheck.handlers as handlers
import aliascheck.mutability as mutability

from .shadow import Opaque, Stub, Truncated, new_instance, qualname_of, stub_type

_ATOMS = mutability.ATOMS


class _Walk:
    def __init__(self, limits: Any) -> None:
        self.limits = limits
        self.memo: dict[int, Any] = {}
        self.keep: list[Any] = []  # keeps walked objects alive so ids stay unique
        self.count = 0
        self.opaque = 0
        self.truncated = False

    def visit(self, obj: Any, depth: int) -> Any:
        if type(obj) in _ATOMS:
            return obj
        key = id(obj)
        if key in self.memo:
            return self.memo[key]
        self.count += 1
        if depth > self.limits.max_depth or self.count > self.limits.max_items:
            self.truncated = True
            return Truncated(qualname_of(type(obj)), "depth limit" if depth > self.limits.max_depth else "size limit")
        self.keep.append(obj)
        try:
            return self._visit(obj, depth + 1)
        except Exception as exc:
            self.opaque += 1
            result = Opaque(qualname_of(type(obj)), f"{type(exc).__name__}: {_short(exc)}")
            self.memo[key] = result
            return result

    def _visit(self, obj: Any, depth: int) -> Any:
        cls = type(obj)
        if cls is list:
            out: list[Any] = []
            self.memo[id(obj)] = out
            out.extend(self.visit(x, depth) for x in obj)
            return out
        if cls is dict:
            mapping: dict[Any, Any] = {}
            self.memo[id(obj)] = mapping
            for k, v in list(obj.items()):
                mapping[self.visit(k, depth)] = self.visit(v, depth)
            return mapping
        if cls is tuple:
            return self._remember(obj, tuple(self.visit(x, depth) for x in obj))
        if cls in (set, frozenset):
            return self._remember(obj, cls(self.visit(x, depth) for x in obj))
        if cls is bytearray:
            return self._remember(obj, bytearray(obj))
        handler = handlers.handler_for(cls)
        # A plain instance as the fingerprint's pickler reduces it: its attribute dict, nothing of the
        # program's run (its __getattribute__, __reduce_ex__, __getstate__).
        reduced = handler(obj) if handler is not None else handlers.plain_reduction(obj)
        if reduced is NotImplemented:
            reduced = obj.__reduce_ex__(5)
        elif handlers.unreadable(reduced):
            self.opaque += 1
        if isinstance(reduced, str):  # a global reduced by name
            return self._remember(obj, stub_type(f"{getattr(obj, '__module__', '?')}.{reduced}"))
        return self._rebuild(obj, reduced, depth)

    def _rebuild(self, obj: Any, reduced: tuple, depth: int) -> Any:
        func, args, state, items, dictitems = (tuple(reduced) + (None,) * 5)[:5]
        # typeshed leaves out copyreg's __newobj__ and __newobj_ex__, which pickle's reductions name.
        if func is copyreg.__newobj__:  # type: ignore[attr-defined]
            func, args = args[0], args[1:]
        elif func is copyreg.__newobj_ex__:  # type: ignore[attr-defined]
            func, args = args[0], tuple(args[1]) + ((args[2],) if args[2] else ())
        if func is new_instance:  # a plain instance (handlers.plain_reduction): its class, its attribute dict
            func, args = stub_type(qualname_of(args[0])), ()
        elif not isinstance(func, type) or not issubclass(func, Stub):
            if getattr(func, "__module__", "") == "aliascheck.shadow":
                return self._remember(obj, func(*args))  # a token made by a handler
            func = stub_type(qualname_of(func))
        out = self._remember(obj, func.__new__(func))  # before the parts: cycles end here
        out.args = tuple(self.visit(a, depth) for a in args)
        out.state = self.visit(state, depth) if state is not None else None
        if items is not None:
            out.items = [self.visit(x, depth) for x in items]
        if dictitems is not None:
            out.dictitems = [(self.visit(k, depth), self.visit(v, depth)) for k, v in dictitems]
        return out

    def _remember(self, obj: Any, result: Any) -> Any:
        self.memo[id(obj)] = result
        return result


def _short(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = "?"
    return text if len(text) <= 80 else text[:77] + "..."


def walk(obj: Any, limits: Any) -> tuple[Any, int, bool]:
    """(shadow tree, number of opaque parts, whether a limit cut the walk)."""
    w = _Walk(limits)
    return w.visit(obj, 0), w.opaque, w.truncated
