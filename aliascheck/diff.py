"""Path-level differences between two fingerprints.

``diff(before, after)`` walks both shadow trees side by side and names every
changed path: ``['snapshot']['index']: 1 -> 4``. Mappings compare as ``==``
compares them (order does not matter), floats compare exactly (NaN equals NaN,
``-0.0`` is not ``0.0``), ``1``, ``True`` and ``1.0`` are different values, and a
change in sharing (two paths that were one object and no longer are, or the
reverse) is a change. Parts that could not be read compare as unknown: they are
never reported as changed, and :meth:`Fingerprint.unverifiable` lists them.
"""

from __future__ import annotations

import math
import reprlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .canonical import MUTABLE, key_digest
from .shadow import BufferToken, GlobalRef, Opaque, Stub, Truncated

__all__ = ["Change", "diff", "diff_shadows", "iter_leaves", "show"]

_MAX_DEPTH = 400
COLLAPSE = 6  # changed items of one collection listed one by one; past that, one summary
PREVIEW = 3  # items named in a summary ("appended 0, 1, 2, ...")
_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6


@dataclass(frozen=True, slots=True)
class Change:
    """One changed path. ``kind``: changed, added, removed, type, bytes, sharing, unknown, or
    (collapsed) grew, shrank, items, keys, set. *text* says a collapsed change in words."""

    path: str
    before: str
    after: str
    kind: str = "changed"
    text: str = ""

    def __str__(self) -> str:
        where = self.path or "<root>"
        if self.text:
            return f"{where}: {self.text}"
        if self.kind == "bytes":
            return f"{where}: {self.after}"
        return f"{where}: {self.before} -> {self.after}"


def show(node: Any) -> str:
    """A short, bounded rendering of a shadow value for reports."""
    if isinstance(node, GlobalRef):
        return node._qualname
    if isinstance(node, Stub):
        if _is_leafy(node):
            return f"{type(node)._qualname}({', '.join(show(a) for a in node.args)})"
        return f"<{type(node)._qualname}>"
    if isinstance(node, BufferToken):
        return node.describe()
    if isinstance(node, (Opaque, Truncated)):
        return f"<{node.type_name}: {node.reason}>"
    if isinstance(node, (list, tuple, dict, set, frozenset)) and _contains_stub(node):
        return f"<{type(node).__name__} of {len(node)}>"
    try:
        return _repr.repr(node)
    except Exception:  # pragma: no cover - shadows repr safely
        return f"<{type(node).__name__}>"


def _contains_stub(node: Any) -> bool:
    values = node.values() if isinstance(node, dict) else node
    return any(isinstance(v, (Stub, BufferToken, Opaque, Truncated, list, dict)) for v in values)


def _is_leafy(stub: Stub) -> bool:
    return (
        not stub.items
        and not stub.dictitems
        and stub.state is None
        and all(type(a) in (int, float, str, bytes, bool, type(None), complex) for a in stub.args)
    )


def diff(before: Any, after: Any, collapse: bool = False, reads: bool = False) -> list[Change]:
    """Every path at which *after* differs from *before* (two Fingerprints).

    With *reads* (a judge asking what someone changed), a key a ``defaultdict`` gained with
    an empty value is left out: reading a missing key adds it (sympy's ``FactRules`` cache),
    which is the read's doing, not an edit.

    With *collapse*, a collection's changes are said once, at the collection:
    ``['seen']: list grew from 0 to 36 items (appended 0, 1, 2, ...)``, ``dict gained
    keys 'a', 'b'``, ``set lost 11 items``, and more than :data:`COLLAPSE` changed
    items as ``list changed at 12 of 40 items (first [3]: 1 -> 2)``.
    """
    if before.digest == after.digest:
        return []
    if before.detail is None or after.detail is None:
        return [Change("", f"digest {before.digest.hex()[:12]}", f"digest {after.digest.hex()[:12]}", "unknown")]
    return diff_shadows(before.shadow(), after.shadow(), collapse=collapse, reads=reads)


def diff_shadows(before: Any, after: Any, path: str = "", collapse: bool = False, reads: bool = False) -> list[Change]:
    out: list[Change] = []
    _Diff(out, collapse, reads).compare(before, after, path, 0)
    return out


_DEFAULTDICT = "collections.defaultdict"
_EMPTY_STUBS = frozenset({_DEFAULTDICT, "collections.OrderedDict", "collections.Counter", "collections.deque"})


def _empty(value: Any) -> bool:
    """What a default factory makes: an empty container, or a zero (``int()``, ``float()``, ``str()``)."""
    if isinstance(value, (list, tuple, dict, set, frozenset, str, bytes)):
        return not value
    if type(value) in (int, float, bool):
        return not value
    if isinstance(value, Stub) and type(value)._qualname in _EMPTY_STUBS:
        return not value.items and not value.dictitems
    return False


class _Diff:
    def __init__(self, out: list[Change], collapse: bool = False, reads: bool = False) -> None:
        self.out = out
        self.collapse = collapse
        self.reads = reads
        self.seen_before: dict[int, str] = {}
        self.seen_after: dict[int, str] = {}

    def add(self, path: str, before: Any, after: Any, kind: str = "changed") -> None:
        self.out.append(Change(path, before if isinstance(before, str) and kind == "bytes" else show(before),
                               after if kind == "bytes" else show(after), kind))

    def compare(self, b: Any, a: Any, path: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        if self._sharing_differs(b, a, path):
            return
        if _kind(b) != _kind(a):
            if not isinstance(b, (Opaque, Truncated)) and not isinstance(a, Truncated):
                self.add(path, b, a, "type")
            return
        if isinstance(b, (list, tuple)):
            self._sequence(b, a, path, depth)
        elif isinstance(b, dict):
            self._mapping(list(b.items()), list(a.items()), path, depth, "[{}]")
        elif isinstance(b, (set, frozenset)):
            self._set(b, a, path)
        elif isinstance(b, GlobalRef):
            if b._qualname != a._qualname:
                self.add(path, b, a)
        elif isinstance(b, Stub):
            self._stub(b, a, path, depth)
        elif isinstance(b, BufferToken):
            self._buffer(b, a, path)
        elif isinstance(b, (Opaque, Truncated)):
            return
        elif not _same_atom(b, a):
            self.add(path, b, a)

    def _sharing_differs(self, b: Any, a: Any, path: str) -> bool:
        if not (isinstance(b, MUTABLE) or isinstance(a, MUTABLE)) or isinstance(b, GlobalRef):
            return False
        first_b, first_a = self.seen_before.get(id(b)), self.seen_after.get(id(a))
        if first_b is None and first_a is None:
            self.seen_before[id(b)] = path
            self.seen_after[id(a)] = path
            return False
        if first_b != first_a:
            self.out.append(Change(path, _alias_text(first_b), _alias_text(first_a), "sharing"))
        return True

    def _sequence(self, b: Any, a: Any, path: str, depth: int) -> None:
        start, changed = len(self.out), 0
        for i, (x, y) in enumerate(zip(b, a, strict=False)):
            before = len(self.out)
            self.compare(x, y, f"{path}[{i}]", depth + 1)
            changed += len(self.out) > before
        if not self.collapse:
            for i in range(len(a), len(b)):
                self.out.append(Change(f"{path}[{i}]", show(b[i]), "<missing>", "removed"))
            for i in range(len(b), len(a)):
                self.out.append(Change(f"{path}[{i}]", "<missing>", show(a[i]), "added"))
            return
        noun = type(b).__name__ if isinstance(b, (list, tuple)) else "sequence"
        self._summarise(start, changed, path, noun, len(b), "items")
        if len(a) != len(b):
            grew = len(a) > len(b)
            moved = a[len(b):] if grew else b[len(a):]
            text = (f"{noun} {'grew' if grew else 'shrank'} from {len(b)} to {_count(len(a), 'item')} "
                    f"({'appended' if grew else 'removed'} {_preview(moved)})")
            self.out.append(Change(path, _count(len(b), "item"), _count(len(a), "item"),
                                   "grew" if grew else "shrank", text))

    def _summarise(self, start: int, changed: int, path: str, noun: str, size: int, unit: str) -> None:
        """Replace more than COLLAPSE changed items of one collection (from ``out[start]`` on) by one change."""
        if changed <= COLLAPSE:
            return
        first = self.out[start]
        del self.out[start:]
        where = first.path[len(path):] if first.path.startswith(path) else first.path
        said = first.text or f"{first.before} -> {first.after}"
        self.out.append(Change(path, f"{noun} of {size}", f"{changed} changed", "items",
                               f"{noun} changed at {changed} of {size} {unit} (first {where}: {said})"))

    def _mapping(self, b: list, a: list, path: str, depth: int, fmt: str, vivifies: bool = False) -> None:
        """*vivifies*: a defaultdict, where reading a missing key adds it with the factory's empty
        value (sympy's ``FactRules`` cache): such a key is the read's doing, not an edit."""
        before = {key_digest(k): (k, v) for k, v in b}
        after = {key_digest(k): (k, v) for k, v in a}
        if vivifies:
            after = {key: kv for key, kv in after.items() if key in before or not _empty(kv[1])}
        start, changed = len(self.out), 0
        gone, new = [], []
        for key, (k, v) in before.items():
            where = path + fmt.format(_key_text(k) if fmt[0] == "[" else k)
            if key in after:
                count = len(self.out)
                self.compare(v, after[key][1], where, depth + 1)
                changed += len(self.out) > count
            else:
                gone.append((where, k, v))
        for key, (k, v) in after.items():
            if key not in before:
                new.append((path + fmt.format(_key_text(k) if fmt[0] == "[" else k), k, v))
        noun, unit = ("dict", "keys") if fmt[0] == "[" else ("object", "attributes")
        if self.collapse:
            self._summarise(start, changed, path, noun, len(before), unit)
        for found, verb, missing_before in ((gone, "lost", False), (new, "gained", True)):
            if self.collapse and len(found) > 1:
                names = _preview([k for _, k, _ in found], _key_text if fmt[0] == "[" else str)
                self.out.append(Change(path, _count(len(before), unit[:-1]), _count(len(after), unit[:-1]),
                                       "keys", f"{noun} {verb} {len(found)} {unit} ({names})"))
                continue
            for where, _, v in found:
                if missing_before:
                    self.out.append(Change(where, "<missing>", show(v), "added"))
                else:
                    self.out.append(Change(where, show(v), "<missing>", "removed"))

    def _set(self, b: Any, a: Any, path: str) -> None:
        digests_b, digests_a = {key_digest(x): x for x in b}, {key_digest(x): x for x in a}
        if digests_b.keys() == digests_a.keys():
            return
        if not self.collapse:
            self.add(path, b, a)
            return
        gained = [x for d, x in digests_a.items() if d not in digests_b]
        lost = [x for d, x in digests_b.items() if d not in digests_a]
        noun = type(b).__name__
        said = [f"gained {_count(len(gained), 'item')} ({_preview(gained)})" if gained else "",
                f"lost {_count(len(lost), 'item')} ({_preview(lost)})" if lost else ""]
        self.out.append(Change(path, _count(len(b), "item"), _count(len(a), "item"), "set",
                               f"{noun} {' and '.join(filter(None, said))}"))

    def _stub(self, b: Stub, a: Stub, path: str, depth: int) -> None:
        if type(b)._qualname != type(a)._qualname:
            self.add(path, b, a, "type")
            return
        if _is_leafy(b) and _is_leafy(a):
            if len(b.args) != len(a.args) or not all(map(_same_atom, b.args, a.args)):
                self.add(path, b, a)
            return
        self._sequence_parts(b.args, a.args, path, depth)
        attrs_b, attrs_a = _attributes(b.state), _attributes(a.state)
        if attrs_b is not None and attrs_a is not None:
            self._mapping(list(attrs_b.items()), list(attrs_a.items()), path, depth, ".{}")
        else:
            self.compare(b.state, a.state, f"{path}.__state__", depth + 1)
        self._sequence(b.items, a.items, path, depth)
        self._mapping(b.dictitems, a.dictitems, path, depth, "[{}]", self.reads and type(b)._qualname == _DEFAULTDICT)

    def _sequence_parts(self, b: tuple, a: tuple, path: str, depth: int) -> None:
        for i, (x, y) in enumerate(zip(b, a, strict=False)):
            self.compare(x, y, f"{path}({i})", depth + 1)
        if len(b) != len(a):
            self.out.append(Change(f"{path}()", f"{len(b)} args", f"{len(a)} args", "changed"))

    def _buffer(self, b: BufferToken, a: BufferToken, path: str) -> None:
        if (b.kind, b.dtype, b.shape, b.device) != (a.kind, a.dtype, a.shape, a.device):
            self.add(path, b, a)
        elif b.digest is not None and a.digest is not None and b.digest != a.digest:
            root, _, name = b.kind.partition(".")
            noun = {"torch": "tensor", "numpy": "array"}.get(root, name.rpartition(".")[2])
            said = _elements(b, a)
            self.out.append(Change(path, b.describe(), f"{noun} bytes changed (shape {list(b.shape)})", "bytes",
                                   f"{noun} bytes changed {said}" if said and self.collapse else ""))


def _elements(b: BufferToken, a: BufferToken) -> str:
    """``at 4 of 16 elements, max |\u0394| 0.04`` for two small buffers whose bytes were kept; else ""."""
    np = sys.modules.get("numpy")
    if np is None or b.sample is None or a.sample is None or len(b.sample) != len(a.sample):
        return ""
    try:
        dtype = np.dtype(b.dtype)
        before, after = np.frombuffer(b.sample, dtype), np.frombuffer(a.sample, dtype)
    except (TypeError, ValueError):  # a dtype numpy does not know (bfloat16) or an odd length
        return ""
    changed = before != after
    if dtype.kind in "fc":
        changed &= ~(np.isnan(before) & np.isnan(after))
    text = f"at {int(changed.sum())} of {before.size} elements"
    if dtype.kind in "iuf" and changed.any():
        delta = np.abs(after[changed].astype(np.float64) - before[changed].astype(np.float64)).max()
        text += f", max |\u0394| {delta:.3g}"
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _preview(items: Any, text: Any = None) -> str:
    shown = [(text or show)(x) for x in list(items)[:PREVIEW]]
    return ", ".join(shown) + (", ..." if len(items) > PREVIEW else "")


def _attributes(state: Any) -> dict | None:
    """An object's reduce state as an attribute mapping, or None if it is not one."""
    if state is None:
        return {}
    if isinstance(state, dict) and all(isinstance(k, str) for k in state):
        return state
    if (
        isinstance(state, tuple)
        and len(state) == 2
        and isinstance(state[1], dict)
        and (state[0] is None or isinstance(state[0], dict))
    ):
        return {**(state[0] or {}), **state[1]}  # (__dict__, __slots__ values)
    return None


def _kind(node: Any) -> Any:
    if isinstance(node, Stub) and not isinstance(node, GlobalRef):
        return Stub
    return type(node)


def _same_atom(b: Any, a: Any) -> bool:
    if type(b) is not type(a):
        return False
    if isinstance(b, float):
        return (math.isnan(b) and math.isnan(a)) or (b == a and math.copysign(1, b) == math.copysign(1, a))
    if isinstance(b, complex):
        return _same_atom(b.real, a.real) and _same_atom(b.imag, a.imag)
    return bool(b == a)


def _key_text(key: Any) -> str:
    return repr(key) if isinstance(key, (str, int, float, bytes, bool, type(None))) else show(key)


def node_at(node: Any, path: str) -> Any:
    """The part of a shadow tree at *path*, a path as :func:`diff` writes it (``['a'][0].b``, a key
    of any type as the diff shows it: ``[lark.lexer.Token('TERMINAL', 'NUMBER')]``); None when the
    tree has no such part. Iterative: one step per path step."""
    rest = path
    while rest:
        for step, part in _steps(node):
            if rest.startswith(step) and (len(rest) == len(step) or rest[len(step)] in ".[("):
                node, rest = part, rest[len(step):]
                break
        else:
            return None
    return node


def _steps(node: Any) -> Iterator[tuple[str, Any]]:
    """(the path step, the part) for each part of a shadow node one level down, as iter_leaves names them."""
    if isinstance(node, (list, tuple)):
        yield from ((f"[{i}]", x) for i, x in enumerate(node))
    elif isinstance(node, dict):
        yield from ((f"[{_key_text(k)}]", v) for k, v in node.items())
    elif isinstance(node, Stub) and not isinstance(node, GlobalRef):
        yield from ((f"({i})", x) for i, x in enumerate(node.args))
        yield from ((f".{k}", v) for k, v in (_attributes(node.state) or {}).items())
        yield from ((f"[{i}]", x) for i, x in enumerate(node.items))
        yield from ((f"[{_key_text(k)}]", v) for k, v in node.dictitems)


def _alias_text(first: str | None) -> str:
    return "its own object" if first is None else f"same object as {first or '<root>'}"


def iter_leaves(node: Any, path: str = "", _seen: set[int] | None = None) -> Iterator[tuple[str, Any]]:
    """(path, leaf) for every leaf of a shadow tree, each shared part once."""
    seen = set() if _seen is None else _seen
    if isinstance(node, MUTABLE) and not isinstance(node, GlobalRef):
        if id(node) in seen:
            return
        seen.add(id(node))
    if isinstance(node, (list, tuple)):
        for i, x in enumerate(node):
            yield from iter_leaves(x, f"{path}[{i}]", seen)
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from iter_leaves(v, f"{path}[{_key_text(k)}]", seen)
    elif isinstance(node, Stub) and not isinstance(node, GlobalRef) and not _is_leafy(node):
        attrs = _attributes(node.state)
        for i, x in enumerate(node.args):
            yield from iter_leaves(x, f"{path}({i})", seen)
        for k, v in (attrs or {}).items():
            yield from iter_leaves(v, f"{path}.{k}", seen)
        if attrs is None:
            yield from iter_leaves(node.state, f"{path}.__state__", seen)
        for i, x in enumerate(node.items):
            yield from iter_leaves(x, f"{path}[{i}]", seen)
        for k, v in node.dictitems:
            yield from iter_leaves(v, f"{path}[{_key_text(k)}]", seen)
    else:
        yield path, node
