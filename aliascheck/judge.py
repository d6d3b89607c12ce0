"""The rules: every decision about whether a handover's change is a finding, one named function each.

In docs/judged.md's order and with its names ("What is judged"); the mechanism modules record,
look up and report, and ask here:

- *Shared*: :func:`shared` (what a change counts in), :func:`own_changes`, :func:`by_owner` and
  :func:`origin` (whose change, the line blamed), :func:`alias_warnings`; :func:`snapshot_changed`
  applies the rules below to one changed snapshot;
- *Held*: :func:`judged` (the cheap first look), :func:`held`, :func:`held_changed`,
  :func:`rehandover`;
- *Followed*: :func:`followed` (live parts coming back), :func:`earlier_inside`;
- *Loads*: :func:`loads`, :func:`load_wrote`, :func:`adopted_changed`;
- *Kept in pieces*: :func:`kept_in_pieces`;
- *Caches*: :func:`cache_value_changed`, :func:`property_changed`, and what is never judged
  (:func:`constant`, :func:`is_store`, :func:`maintained`);
- *Shallow copies*: :func:`copy_changed`;
- *Messages*: :func:`message_changed`, :func:`buffer_changed` (out-of-band buffers),
  :func:`unpicklable`;
- *Kept* (library -> project): :func:`kept`;
- *Handed* (project -> library): :func:`handed`, :func:`passed_again`;
- *Copied*: :func:`copied`.

The first five are the ledger's, on state-protocol snapshots; they live in
:mod:`aliascheck.judge_snapshots` (this module would pass 600 lines) and are re-exported here, as are
the last three, the boundary's, which live with it in :mod:`aliascheck.boundary.rules`.
Every record is an :class:`aliascheck.records.Record`; findings go through ``Ledger.report``;
nothing here raises into user code. The boundary's rules decide on facts its bookkeeping answers
(*at*: the test's :mod:`aliascheck.boundary.runtime` state): this module imports neither the ledger
nor the boundary's runtime.

Cost: a message of atoms is kept as a shallow copy and compared by identity at
C speed (atoms cannot change, so the copy is the whole value); a cached value whose
C pickle equals its fingerprint's detail is compared by that pickle alone. The
fingerprint and the diff run only when something looks different.
"""
from __future__ import annotations

import _pickle
import dis
import gc
import operator
import pickle
import sys
import types
from dataclasses import replace
from typing import Any

import xxhash

import aliascheck.boundary.rules as boundary_rules
import aliascheck.guard as guard
import aliascheck.judge_snapshots as snapshots
import aliascheck.mutability as mutability

from .diff import Change, diff
from .fingerprint import Fingerprint, fingerprint
from .records import Record

PROTOCOL = pickle.DEFAULT_PROTOCOL  # multiprocessing's feeder pickles with it
FLAT = Fingerprint(b"", b"")  # a record's fingerprint when its ``flat`` copy is the value
_ATOMS = mutability.ATOMS
_is = operator.is_

# -- Shared, Held, Followed, Loads, Kept in pieces: the ledger's rules, in aliascheck/judge_snapshots.py --
snapshot_changed = snapshots.snapshot_changed
shared = snapshots.shared
own_changes = snapshots.own_changes
by_owner = snapshots.by_owner
origin = snapshots.origin
alias_warnings = snapshots.alias_warnings
judged = snapshots.judged
held = snapshots.held
held_changed = snapshots.held_changed
pieces_changed = snapshots.pieces_changed
buffer_pieces = snapshots.buffer_pieces
rehandover = snapshots.rehandover
followed = snapshots.followed
earlier_inside = snapshots.earlier_inside
loads = snapshots.loads
load_wrote = snapshots.load_wrote
adopted_changed = snapshots.adopted_changed
kept_in_pieces = snapshots.kept_in_pieces

# -- Kept, Handed, Copied: the boundary's rules, in aliascheck/boundary/rules.py ----------------
kept = boundary_rules.kept
handed = boundary_rules.handed
passed_again = boundary_rules.passed_again
copied = boundary_rules.copied
SHARED_DEPTH, SHARED_LIMIT = snapshots.SHARED_DEPTH, snapshots.SHARED_LIMIT


# -- Caches --------------------------------------------------------------------------
def constant(value: Any) -> bool:
    """Immutable all the way down, or code: never judged (aliascheck.mutability's table)."""
    return type(value) in mutability.CODE or mutability.immutable(value)


def _parts(value: Any) -> Any:
    if isinstance(value, dict):
        return value.values()
    if isinstance(value, (*mutability.CONTAINERS, tuple)):
        return value
    if mutability.is_buffer(value):
        return (value,)  # an array or tensor holds data: never a store
    return [v for _, v in mutability.attributes(value)]


# What a registry holds: functions and classes, by name (a dispatch table, not data).
_REGISTERED = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)
_HEAPTYPE = 1 << 9


def _registered(value: Any) -> bool:
    """A function, a class, or an object that owns its state (a codec, a handler): not data."""
    kind = type(value)
    return isinstance(value, _REGISTERED) or bool(kind.__flags__ & _HEAPTYPE and not mutability.plain_data(value))


def is_store(value: Any) -> bool:
    """A store rather than a result: empty, or holding only empty containers (``{"handlers": []}``), or
    a registry seeded with functions, classes or service objects (``{"json": json.dumps}``, ``{"json":
    JsonCodec()}``, extended by a ``register()``)."""
    parts = _parts(value)
    if not len(parts):
        return True
    return len(parts) <= 64 and (all(isinstance(v, mutability.CONTAINERS) and not v for v in parts)
                                 or (type(value) is dict and all(map(_registered, parts))))


def changed(before: Fingerprint, after: Fingerprint) -> bool:
    return before.digest != after.digest and before != after


def plain(value: Any) -> bytes | None:
    """*value*'s C pickle (protocol 5, as a fingerprint's detail is made), or None if it cannot be made.
    Pickling calls the state methods of what is inside: aliascheck's own work, not handovers."""
    guard.enter()
    try:
        return _pickle.dumps(value, 5)
    except Exception:
        return None
    finally:
        guard.leave()


def cache_value(value: Any) -> tuple[Fingerprint, bytes | None]:
    """A cached value's fingerprint, and its plain pickle when that is the same bytes (nothing in it
    that a fingerprint reads its own way): later looks then compare that pickle alone.

    Plain data is the value; an object held inside it that owns its state (an AST node, a client, a
    project's node) is judged by which object it is, not what it holds: a cache of references hands out
    the objects themselves, and their own workings are theirs (as a cached object at the top is never
    judged, :func:`aliascheck.mutability.plain_data`)."""
    fp = fingerprint(value, by_identity=True)
    data = plain(value) if fp.verifiable and fp.exact else None
    return fp, (data if data is not None and data == fp.detail else None)


def cache_value_changed(rec: Record, check: str) -> bool:
    """Whether a cached value (or a ``cached_property`` value) differs from its record; reports the
    change (``cache-hit`` at a hand-out, ``cache`` at teardown or the instance's death)."""
    if rec.plain is not None and plain(rec.obj) == rec.plain:
        return False
    fp = fingerprint(rec.obj, by_identity=True)
    if not changed(rec.fp, fp):
        return False
    changes = diff(rec.fp, fp, collapse=True, reads=True)
    if _overridden(rec.obj, changes):
        return False  # the test's own override, undone at its teardown: looked at again next time
    rec.flagged = True
    site, stack = rec.where.text()
    rec.ledger.report("mutation", changes, owner=rec.owner_name,
                      label=rec.label, site=site, stack=stack, check=check, origin=rec.origin)
    return True


def _overridden(root: Any, changes: list[Change]) -> bool:
    """Every change is an attribute or an item that pytest's ``monkeypatch`` set and will undo at the
    test's teardown (``monkeypatch.setattr(get_settings(), "debug", True)``, ``setitem``): the test
    harness overriding a cached value on purpose, not a caller editing it. Looked for only once a
    change is found (one heap scan for the live ``MonkeyPatch`` objects)."""
    module = sys.modules.get("_pytest.monkeypatch")
    patcher = getattr(module, "MonkeyPatch", None)
    if not changes or not isinstance(patcher, type):
        return False
    patched: set[tuple[int, Any]] = set()
    for ref in gc.get_referrers(patcher):
        if type(ref) is patcher:
            own = boundary_rules.instance_dict(ref) or {}
            for entry in list(own.get("_setattr") or ()) + list(own.get("_setitem") or ()):
                if type(entry) is tuple and len(entry) == 3:
                    patched.add((id(entry[0]), entry[1]))
    if not patched:
        return False
    for change in changes:
        steps = boundary_rules._PATH_STEP.findall(change.path)
        if not steps:
            return False
        parent = boundary_rules.at_path(root, "".join(steps[:-1])) if len(steps) > 1 else root
        last = steps[-1]
        name: Any = last[1:] if last.startswith(".") else last[2:-2] if last.startswith("['") else None
        if parent is None or name is None or (id(parent), name) not in patched:
            return False
    return True


def property_changed(rec: Record) -> bool:
    """A ``cached_property`` value, while its instance's attribute still holds it (``rec.keeper``: the
    instance's ``__dict__``); a rebound or invalidated attribute is a new value, not an edit."""
    if rec.keeper.get(rec.key[1]) is not rec.obj:
        return False
    return cache_value_changed(rec, "cache")


def cache_unverifiable(rec: Record, said: set[str]) -> bool:
    """False (and one ``unverifiable`` note per owner and test, in *said*) when part of a value cannot
    be read."""
    if rec.fp.verifiable:
        return True
    if rec.owner_name not in said:
        said.add(rec.owner_name)
        rec.ledger.report("unverifiable", [Change(p, what, "not checked") for p, what in rec.fp.unverifiable()],
                          owner=rec.owner_name, check="cache", site=rec.where.site)
    return False


# -- Caches: what a class maintains ----------------------------------------------------------
_maintained_cache: dict[tuple[type, str, bool], bool] = {}
_MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse", "update",
                       "setdefault", "popitem", "add", "discard", "difference_update", "intersection_update",
                       "symmetric_difference_update", "appendleft", "extendleft", "popleft", "rotate",
                       "__setitem__", "__delitem__", "__iadd__"})


def maintained(cls: type, name: str, getter: Any, rebinds: bool = True) -> bool:
    """Whether *cls*'s own methods edit or (*rebinds*) rebind ``self.<name>``: state the instance
    maintains, not judged. Not *rebinds*: only a write into it in place counts (``self._cache[k] = v``,
    ``self._seen.add(x)``), not the ``self._cache = {}`` every ``__init__`` makes."""
    key = (cls, name, rebinds)
    known = _maintained_cache.get(key)
    if known is None:
        codes = [c for klass in cls.__mro__[:-1] for v in vars(klass).values() for c in _codes(v, getter)]
        known = _maintained_cache[key] = any(edits(code, name, rebinds) for code in codes)
    return known


_instance_free_cache: dict[Any, bool] = {}


def instance_free(getter: Any) -> bool:
    """Whether a ``cached_property``'s getter never reads its instance (``return {"n": 0}``, ``return
    []``): its value is an attribute the instance creates at first use and owns, as if ``__init__`` had
    set it, not a value derived from the instance that an edit would put out of step. Read from the
    code as compiled without marks, once per code object."""
    if type(getter) is not types.FunctionType:
        return False
    code = getter.__code__
    known = _instance_free_cache.get(code)
    if known is None:
        rewrite = sys.modules.get("aliascheck.boundary.rewrite")
        plain = rewrite.plain_code(code) if rewrite is not None else code
        me = plain.co_varnames[0] if plain.co_argcount else None
        known = me is not None and me not in plain.co_cellvars and not any(
            (ins.opname.startswith("LOAD_FAST") or ins.opname == "DELETE_FAST")
            and (ins.argval == me or (type(ins.argval) is tuple and me in ins.argval))
            for ins in dis.get_instructions(plain))
        _instance_free_cache[code] = known
    return known


def _codes(value: Any, getter: Any) -> list[Any]:
    found = []
    for fn in (value, getattr(value, "__func__", None), getattr(value, "fget", None), getattr(value, "fset", None),
               getattr(value, "func", None)):
        code = getattr(fn, "__code__", None)
        if code is not None and fn is not getter:
            stack = [code]
            while stack:
                one = stack.pop()
                found.append(one)
                stack.extend(c for c in one.co_consts if isinstance(c, types.CodeType))
    return found


def edits(code: Any, name: str, rebinds: bool = True) -> bool:
    """Whether *code* stores or deletes (*rebinds*), subscript-assigns or calls a mutator on ``.<name>``."""
    if name not in code.co_names:
        return False
    loaded_line = None
    line = None
    previous = None
    for ins in dis.get_instructions(code):
        # 3.13 made starts_line a bool and added line_number: a statement, so mypy checks each branch
        if sys.version_info >= (3, 13):
            number = ins.line_number
        else:
            number = ins.starts_line
        if number is not None:
            line = number
        if rebinds and ins.opname in ("STORE_ATTR", "DELETE_ATTR") and ins.argval == name:
            return True
        if previous is not None and previous.opname in ("LOAD_ATTR", "LOAD_METHOD") and previous.argval == name:
            loaded_line = line
            if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in _MUTATORS:
                return True
        if ins.opname in ("STORE_SUBSCR", "DELETE_SUBSCR") and loaded_line == line:
            return True
        previous = ins
    return False


# -- Shallow copies -----------------------------------------------------------------------
def copy_changes(rec: Record) -> list[tuple[str, list[Change]]]:
    """The attributes a copy (``rec.keeper``: both instances' ``__dict__``) still shares with its original
    and that changed since the copy was made."""
    ours, theirs = rec.keeper
    out = []
    for name, value, before in rec.parts:
        if ours.get(name) is value and theirs.get(name) is value:  # still shared by both
            after = fingerprint(value)
            if changed(before, after):
                # A lazily initialised attribute filled by a read (rule *Copied*'s precision: the
                # owner's intent, as a cached_property's value is) is no change the two share.
                changes = [Change(f".{name}{c.path}", c.before, c.after, c.kind, c.text)
                           for c in diff(before, after, collapse=True, reads=True)
                           if not boundary_rules.materialised(value, c, after)]
                if changes:
                    out.append((name, changes))
    return out


def copy_changed(rec: Record, check: str) -> bool:
    """Judge a copy once (``copy`` at the first death, ``copy-teardown``); the instances are let go."""
    cls_name = rec.owner_name.partition(" ")[0].rpartition(".")[2]
    found, rec.keeper, rec.parts = copy_changes(rec), ({}, {}), ()  # the dead one's attributes are let go
    rec.flagged = True
    site, stack = rec.where.text() if found else ("", ())
    for name, changes in found:
        rec.ledger.report("mutation", changes, owner=rec.owner_name, label=rec.label, site=site, stack=stack,
                          check=check, shares=f"{cls_name}.{name}")
    return bool(found)




# -- Messages ---------------------------------------------------------------------------
def message_value(obj: Any) -> tuple[Any, Fingerprint]:
    """(a shallow copy, FLAT) for a dict or list of atoms (dict keys too), else (None, its fingerprint)."""
    kind = type(obj)
    if kind is dict:
        if _ATOMS.issuperset(map(type, obj.values())) and _ATOMS.issuperset(map(type, obj)):
            return obj.copy(), FLAT
    elif kind is list and _ATOMS.issuperset(map(type, obj)):
        return obj[:], FLAT
    return None, fingerprint(obj)


def same_flat(then: Any, now: Any) -> bool:
    """Whether *now* holds the very keys and values *then* (a flat copy) held, in order: then its pickle
    is the same bytes. At C speed; a False here is looked at closely by :func:`message_changed`."""
    if type(now) is not type(then) or len(now) != len(then):
        return False
    if type(then) is dict:
        return all(map(_is, then.values(), now.values())) and all(map(_is, then, now))
    return all(map(_is, then, now))


def as_fingerprint(rec_flat: Any, fp: Fingerprint) -> Fingerprint:
    """A record's value as a fingerprint the diff reads (a flat copy is pickled as the feeder would)."""
    if fp is not FLAT:
        return fp
    data = _pickle.dumps(rec_flat, PROTOCOL)
    return Fingerprint(xxhash.xxh3_128_digest(data), data)


def _now(obj: Any) -> tuple[Any, Fingerprint]:
    kind = type(obj)
    if kind is dict or kind is list:
        return message_value(obj)
    return None, fingerprint(obj)


def message_changed(rec: Record, check: str, now: tuple[Any, Fingerprint] | None = None,
                    taken: set[int] | None = None, only_bytes: bool = False, within: str = "") -> bool:
    """Compare a message with its value now (or *now*, from :func:`message_value`); report what the
    sender changed. *taken*: ids of arguments a receiver already took (a change there may be theirs).
    *only_bytes*: only the tensors' and arrays' bytes are judged (its receiver runs with it now);
    *within*: only the changes under this path are.
    Never raises."""
    led = rec.ledger
    try:
        flat = rec.flat
        if flat is not None and now is None and same_flat(flat, rec.obj):
            return False
        now_flat, now_fp = _now(rec.obj) if now is None else now
        if flat is not None and now_flat is not None and same_flat(flat, now_flat):
            return False
        before = as_fingerprint(flat, rec.fp)
        after = as_fingerprint(now_flat, now_fp)
        if after.digest == before.digest:
            return False
        changes = diff(before, after, collapse=True, reads=True)
        call = rec.kind == "call"
        exclude = rec.exclude + taken_paths(rec, taken) if call and taken else rec.exclude
        if exclude:
            changes = [c for c in changes if not any(under(c.path, p) for p in exclude)]
        if only_bytes:
            changes = [c for c in changes if c.kind == "bytes" and (not within or under(c.path, within))]
        if not changes:  # equal as == compares (a dict's order, a set's), or only in what is not judged
            return False
        if call:
            changes = [replace(c, path=call_path(c.path)) for c in changes]
        rec.flagged = True
        led.report("mutation", changes, owner=rec.owner_name, label=rec.label, site=rec.where.site,
                   stack=rec.where.stack, check=check, thread=rec.thread.name)
        return True
    except Exception as exc:
        internal(led, rec.owner_name, exc)
        return False


def fed_unchanged(rec: Record, data: Any) -> bool:
    """Whether the feeder's pickle *data* (default protocol, or None) is a flat message's value at the send."""
    flat = rec.flat
    return data is not None and flat is not None and data == _pickle.dumps(flat, PROTOCOL)


def taken_paths(rec: Record, taken: set[int]) -> tuple[str, ...]:
    """The arguments of a call message a receiver has already taken (through an earlier message)."""
    args, kwargs = rec.obj
    return (*(f"[0][{i}]" for i, x in enumerate(args) if id(x) in taken),
            *(f"[1][{k!r}]" for k, v in kwargs.items() if id(v) in taken))


def under(path: str, prefix: str) -> bool:
    return path.startswith(prefix) and (len(path) == len(prefix) or path[len(prefix)] in ".[")


def segments(path: str) -> list[str]:
    """``['a'][0].x`` -> ``["['a']", "[0]", ".x"]`` (keys are reprs: brackets and dots inside quotes)."""
    out, i, n = [], 0, len(path)
    while i < n:
        j = i + 1
        if path[i] == "[":
            quote = ""
            while j < n and (quote or path[j] != "]"):
                if quote and path[j] == "\\":
                    j += 1
                elif path[j] == quote:
                    quote = ""
                elif not quote and path[j] in "'\"":
                    quote = path[j]
                j += 1
            j += 1
        else:
            while j < n and path[j] not in ".[":
                j += 1
        out.append(path[i:j])
        i = j
    return out


def holder(path: str, call: bool) -> str:
    """The top-level part of a message that holds the unreadable object at *path* ("" for the whole)."""
    parts = segments(path)
    depth = 2 if call else 1  # a call's top-level parts are args[i] and kwargs[k]
    return "".join(parts[:depth]) if len(parts) > depth else ""


def call_path(path: str) -> str:
    """``[0][1]['x']`` of ``(args, kwargs)`` as ``args[1]['x']``."""
    if path.startswith("[0]"):
        return "args" + path[3:]
    if path.startswith("[1]"):
        return "kwargs" + path[3:]
    return path


def message_unverifiable(led: Any, owner: str, label: str, fp: Fingerprint, where: Any,
                         said: set[tuple[int, str, str]]) -> None:
    """A pickled message with parts that cannot be read: said once per (ledger, owner, path) in *said*."""
    fresh = []
    for path, what in fp.unverifiable():
        key = (id(led), owner, path)
        if key not in said:
            said.add(key)
            fresh.append(Change(path, what, "not checked"))
    if fresh:
        led.report("unverifiable", fresh, owner=owner, label=label, check="send", site=where.site,
                   stack=where.stack,
                   hint="this part of the message cannot be pickled or read: send picklable data, "
                        "or register a fingerprint handler (aliascheck.register_handler)")


def unpicklable(rec: Record, exc: Exception) -> None:
    """The feeder could not pickle a message: the receiver never gets it (the error goes where the
    channel sends it: printed by the queue's feeder, set on the future)."""
    led = rec.ledger
    try:
        if not led.recording or rec.flagged:
            return
        rec.flagged = True  # not sent: a later change is no one's concern
        if rec.fp is not FLAT and not rec.fp.verifiable:
            return  # said at the send already, with the path of what cannot be read
        led.report("unverifiable", [Change("<message>", f"{type(exc).__name__}: {exc}", "not sent")],
                   owner=rec.owner_name, label=rec.label, site=rec.where.site, stack=rec.where.stack,
                   check="feed", thread=rec.thread.name,
                   hint="the message could not be pickled: send picklable data (the channel's own error says why)")
    except Exception:  # pragma: no cover - nothing may escape into the feeder
        pass


def internal(led: Any, owner: str, problem: Any, check: str = "send", what: str = "message") -> None:
    """An aliascheck limit or bug met while recording a message (or judging a load): said, never raised."""
    try:
        text = problem if isinstance(problem, str) else f"{type(problem).__name__}: {problem}"
        led.report("unverifiable", [Change(f"<{what}>", text, "not checked")], owner=owner, check=check,
                   hint=f"an aliascheck limit or bug: the {what} was not checked")
    except Exception:  # pragma: no cover - nothing may escape into the user's send
        pass


# -- out-of-band pickle buffers ---------------------------------------------------------
def buffer_digest(buf: Any) -> bytes | None:
    """A digest of the bytes *buf* views; None for read-only memory (it cannot change) or a released buffer."""
    try:
        view = buf.raw()
    except (BufferError, ValueError):  # non-contiguous, or released
        try:
            view = memoryview(buf).tobytes()  # type: ignore[assignment]
        except (BufferError, ValueError):
            return None
        return xxhash.xxh3_128_digest(view)
    if view.readonly:
        return None
    return xxhash.xxh3_128_digest(view)


def buffer_changed(rec: Record, buf: Any, check: str) -> bool:
    """Compare the bytes an out-of-band buffer views now with those at ``dumps`` (``rec.fp.digest``)."""
    led = rec.ledger
    try:
        now = buffer_digest(buf)
        then = rec.fp.digest
        if now is None or now == then:
            return False
        rec.flagged = True
        try:
            size = f"the {memoryview(buf).nbytes} bytes"
        except (BufferError, ValueError):
            size = "the bytes"
        led.report("mutation", [Change("<buffer>", f"xxh3 {then.hex()[:16]}", f"xxh3 {now.hex()[:16]}", "bytes",
                                       f"{size} the out-of-band buffer views changed after dumps")],
                   owner=rec.owner_name, label=rec.label, site=rec.where.site, stack=rec.where.stack, check=check,
                   thread=rec.thread.name)
        return True
    except Exception as exc:
        internal(led, rec.owner_name, exc)
        return False
