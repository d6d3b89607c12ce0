"""caches adapter: values handed out by a cache, and objects made by a shallow copy.

``functools.lru_cache``/``cache``/``cached_property`` hand every caller the stored
value itself: a caller that edits it changes what every later caller gets
(sktime#6451, truenas/middleware#11567). ``copy.copy`` and ``dataclasses.replace``
make a new object that shares its nested mutables with the original: an edit
through either one changes the other (pvcaptest#69, ops-scenario#44).

While installed, the five names are patched (re-entrant, undone by the returned
undo), and the modules already imported from the project (the test modules, a
conftest's imports) are scanned: a name bound there to one of the five is rebound
to the watched one, a cache made there by ``lru_cache``/``cache`` is wrapped in
place (its stored values kept), and a ``cached_property`` of a class defined there
is replaced by a watched one. Caches made by installed libraries, or before the
session outside the project, are left alone. Only project code is watched (the
scope :mod:`aliascheck.discovery` decides: the session's roots, not site-packages).

What is judged (docs/judged.md, "What is judged"):

- a cached value whose store aliascheck saw (a miss while installed) and that is
  plain data (dict, list, set, bytearray, deque, a tuple holding one, a dataclass
  instance, a ``SimpleNamespace``), unless it was a *store* when the cache made it:
  empty, or holding only empty containers (``@cache def registry(): return {}``);
  a change is a finding at the next call that hands it out (``cache-hit``) and at
  teardown (``cache``);
- a ``cached_property`` value likewise, unless the class's own methods edit or
  rebind that attribute (the instance maintains it); at the instance's death and
  at teardown, while the attribute still holds that value;
- a nested mutable (plain data, as above) that a ``copy.copy``/``dataclasses.replace``
  result shares with its original, both instances with a ``__dict__`` that can be
  weakly referenced: at the first death of either (``copy``) and at teardown for
  pairs still alive (``copy-teardown``), if both still hold it and it changed.

Cost: a wrapper does one global read when no test is recording; results of
immutable types are let through after a type check; the rest is ``fingerprint()``
(C pickle). Findings go through ``Ledger.report``; a wrapper never raises its own
errors, and the user's exceptions pass through unchanged.
"""

from __future__ import annotations

import copy as _copy
import dataclasses
import dis
import functools
import gc
import os
import reprlib
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

import aliascheck.ledger as _ledger
import aliascheck.mutability as mutability
import aliascheck.sites as sites
from aliascheck.diff import Change, diff
from aliascheck.discovery import Discovery
from aliascheck.fingerprint import Fingerprint, fingerprint
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import patch, project_namespaces, rebind, undo_all
from aliascheck.shadow import qualname_of

REQUIRES = None
MAX_KEYS = 4096  # stored-value decisions kept per cache (hashes, not the arguments)
HIT_CHECK_BYTES = 16 * 1024  # a value whose fingerprint is larger is checked at teardown only, not per hit

_LRU_TYPE = type(functools.lru_cache(lambda: None))  # functools._lru_cache_wrapper
_CACHED_PROPERTY: type = getattr(functools.cached_property, "__aliascheck_original__", functools.cached_property)
_MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse", "update",
                       "setdefault", "popitem", "add", "discard", "difference_update", "intersection_update",
                       "symmetric_difference_update", "appendleft", "extendleft", "popleft", "rotate",
                       "__setitem__", "__delitem__", "__iadd__"})
_KWARGS = object()  # separates positional from keyword arguments in a key, as lru_cache does
_repr = reprlib.Repr()
_repr.maxstring, _repr.maxother, _repr.maxlist, _repr.maxdict = 40, 40, 4, 4

# The innermost installed session's scope: whose code is watched (pytester nests sessions).
_scopes: list[Callable[[str], bool]] = []
_tls = threading.local()


# -- what is judged ------------------------------------------------------------------
def _atomic(value: Any) -> bool:
    """Immutable all the way down, or code: judged by type alone (aliascheck.mutability's table)."""
    return type(value) in mutability.CODE or mutability.immutable(value)


def _parts(value: Any) -> Any:
    if isinstance(value, dict):
        return value.values()
    if isinstance(value, (*mutability.CONTAINERS, tuple)):
        return value
    if mutability.is_buffer(value):
        return (value,)  # an array or tensor holds data: never a store
    return [v for _, v in mutability.attributes(value)]


def _store(value: Any) -> bool:
    """A store rather than a result: empty, or holding only empty containers (``{"handlers": []}``)."""
    parts = _parts(value)
    if not len(parts):
        return True
    return len(parts) <= 64 and all(isinstance(v, mutability.CONTAINERS) and not v for v in parts)


def _in_scope(fn: Any) -> bool:
    """Whether *fn* (unwrapped) is defined in the innermost session's project."""
    for _ in range(8):
        inner = getattr(fn, "__wrapped__", None)
        if inner is None:
            break
        fn = inner
    code = getattr(fn, "__code__", None)
    return bool(_scopes) and code is not None and _scopes[-1](code.co_filename)


def _where(fn: Any) -> str:
    """``file:line in module.qualname`` of *fn*'s definition: the line a fix changes."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    name = f"{getattr(fn, '__module__', '') or ''}.{getattr(fn, '__qualname__', '?')}".lstrip(".")
    return f"{sites._short(code.co_filename)}:{sites._return_line(code)} in {name}"


def _changed(before: Fingerprint, after: Fingerprint) -> bool:
    return before.digest != after.digest and before != after


# -- one ledger's records for the running test --------------------------------------
class _Handout:
    __slots__ = ("obj", "fp", "owner", "label", "origin", "frames", "flagged")

    def __init__(self, obj: Any, fp: Fingerprint, owner: str, label: str, origin: str) -> None:
        self.obj, self.fp, self.owner, self.label, self.origin = obj, fp, owner, label, origin
        self.frames = sites.capture()
        self.flagged = False


class _Property:
    __slots__ = ("ref", "attrs", "name", "value", "fp", "owner", "label", "origin", "frames")
    ref: Any
    attrs: dict[str, Any]
    name: str
    value: Any
    fp: Fingerprint
    owner: str
    label: str
    origin: str
    frames: sites.Where


class _Pair:
    __slots__ = ("refs", "dicts", "shared", "owner", "label", "kind", "frames", "done")
    refs: tuple[Any, Any]
    dicts: tuple[dict[str, Any], dict[str, Any]]
    shared: list[tuple[str, Any, Fingerprint]]
    owner: str
    label: str
    kind: str
    frames: sites.Where
    done: bool


class _Records:
    def __init__(self, test: str | None) -> None:
        self.test = test
        self.lock = threading.RLock()
        self.handouts: dict[int, _Handout] = {}
        self.properties: dict[tuple[int, str], _Property] = {}
        self.pairs: dict[int, _Pair] = {}
        self.opaque: set[str] = set()


_records: weakref.WeakKeyDictionary[Any, _Records] = weakref.WeakKeyDictionary()
_records_lock = threading.Lock()


def _for(led: Any) -> _Records:
    with _records_lock:
        found = _records.get(led)
        if found is None or found.test != led.test:  # an abandoned test's records are dropped
            found = _records[led] = _Records(led.test)
        return found


def _verifiable(led: Any, recs: _Records, owner: str, fp: Fingerprint, frames: Any) -> bool:
    """False (and one ``unverifiable`` note per owner and test) when part of a value cannot be read."""
    if fp.verifiable:
        return True
    if owner not in recs.opaque:
        recs.opaque.add(owner)
        led.report("unverifiable", [Change(p, what, "not checked") for p, what in fp.unverifiable()],
                   owner=owner, check="cache", site=frames.site)
    return False


# -- lru_cache and cache ---------------------------------------------------------------
class _Cache:
    """One watched cache: which of its stored values are judged (by key hash -> id of the value)."""

    def __init__(self, cached: Any, fn: Any, kind: str) -> None:
        self.cached, self.fn = cached, fn
        self.name = f"{getattr(fn, '__module__', '') or ''}.{getattr(fn, '__qualname__', '?')}".lstrip(".")
        self.owner = f"{self.name} ({kind})"
        self.origin = _where(fn)
        self.judged: dict[int, int] = {}
        self.lock = threading.Lock()

    def stored(self, args: tuple, kwargs: dict, value: Any) -> None:
        """The cache just made *value* for these arguments: a result is judged, a store is not."""
        key = hash((*args, _KWARGS, *kwargs.items()) if kwargs else args)
        with self.lock:
            self.judged.pop(key, None)
            if mutability.plain_data(value) and not _store(value):
                if len(self.judged) >= MAX_KEYS:
                    self.judged.pop(next(iter(self.judged)))
                self.judged[key] = id(value)

    def handed_out(self, led: Any, args: tuple, kwargs: dict, value: Any) -> None:
        key = hash((*args, _KWARGS, *kwargs.items()) if kwargs else args)
        if self.judged.get(key) != id(value):
            return
        recs = _for(led)
        rec = recs.handouts.get(id(value))
        if rec is not None and rec.obj is value and (rec.flagged or rec.fp.detail is None
                                                     or len(rec.fp.detail) > HIT_CHECK_BYTES):
            return  # reported already, or too large to fingerprint on every hit: teardown checks it
        fp = fingerprint(value)
        with recs.lock:
            rec = recs.handouts.get(id(value))
            if rec is None or rec.obj is not value:
                rec = _Handout(value, fp, self.owner, self.label(args, kwargs), self.origin)
                led.note_handover(self.owner)
                if _verifiable(led, recs, self.owner, fp, rec.frames):
                    recs.handouts[id(value)] = rec
                return
            if rec.flagged:
                return
            if _changed(rec.fp, fp):
                _report_handout(led, rec, fp, "cache-hit")
                return
            rec.frames = sites.capture()  # unchanged: the next edit follows this hand-out

    def label(self, args: tuple, kwargs: dict) -> str:
        shown = [_repr.repr(a) for a in args] + [f"{k}={_repr.repr(v)}" for k, v in kwargs.items()]
        return f"{self.name.rpartition('.')[2]}({', '.join(shown)})"


def _report_handout(led: Any, rec: _Handout, fp: Fingerprint, check: str) -> None:
    rec.flagged = True
    site, stack = rec.frames.text()
    led.report("mutation", diff(rec.fp, fp, collapse=True, reads=True), owner=rec.owner, label=rec.label, site=site,
               stack=stack, check=check, origin=rec.origin)


def _watched(cached: Any, fn: Any, kind: str, hooked: bool) -> Any:
    """A function in front of the C cache *cached*; *hooked*: its misses are reported by ``_computing``."""
    cache = _Cache(cached, fn, kind)
    info = cached.cache_info

    @functools.wraps(fn)
    def watched(*args: Any, **kwargs: Any) -> Any:
        led = _ledger.current
        if led is None or not led.recording:
            return cached(*args, **kwargs)
        misses = -1 if hooked else info().misses  # a cache made before the install: misses show in its counters
        result = cached(*args, **kwargs)
        if not _atomic(result):
            try:
                if misses >= 0 and info().misses != misses:
                    cache.stored(args, kwargs, result)
                cache.handed_out(led, args, kwargs, result)
            except Exception:  # pragma: no cover - aliascheck's own failure must not reach the caller
                pass
        return result

    watched.cache_info = cached.cache_info  # type: ignore[attr-defined]
    watched.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    watched.cache_parameters = cached.cache_parameters  # type: ignore[attr-defined]
    watched.__aliascheck_cache__ = cache  # type: ignore[attr-defined]
    return watched


def _computing(fn: Any, holder: list[_Cache]) -> Any:
    """*fn* as the C cache calls it on a miss: every value it makes is classified (result or store)."""

    @functools.wraps(fn)
    def computing(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if holder and not _atomic(result):
            try:
                holder[0].stored(args, kwargs, result)
            except Exception:  # pragma: no cover - unhashable keys raise in the C cache first
                pass
        return result

    return computing


def _make(original_lru: Any, fn: Any, maxsize: Any, typed: bool, kind: str) -> Any:
    # Nothing is stored, or the function is not the project's (an installed library's): not watched.
    if (isinstance(maxsize, int) and maxsize <= 0) or not callable(fn) or not _in_scope(fn):
        return original_lru(maxsize, typed)(fn)
    holder: list[_Cache] = []
    cached = original_lru(maxsize, typed)(_computing(fn, holder))
    watched = _watched(cached, fn, kind, hooked=True)
    holder.append(watched.__aliascheck_cache__)
    return watched


def _lru_cache(original: Any) -> Any:
    @functools.wraps(original)
    def lru_cache(maxsize: Any = 128, typed: bool = False) -> Any:
        if callable(maxsize) and isinstance(typed, bool):  # @lru_cache with no arguments
            return _make(original, maxsize, 128, typed, "lru_cache")
        original(maxsize, typed)  # a bad maxsize raises here, as it would without aliascheck

        def decorating(fn: Any) -> Any:
            return _make(original, fn, maxsize, typed, "lru_cache")

        return decorating

    return lru_cache


def _cache(original: Any) -> Any:
    @functools.wraps(original)
    def cache(user_function: Any) -> Any:
        lru = getattr(functools.lru_cache, "__aliascheck_original__", functools.lru_cache)
        return _make(lru, user_function, None, False, "cache")

    return cache


# -- cached_property ---------------------------------------------------------------
class _SameClass(type):
    # isinstance(p, functools.cached_property) stays true for properties made before the install.
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, _CACHED_PROPERTY)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return issubclass(subclass, _CACHED_PROPERTY)


class _WatchedProperty(_CACHED_PROPERTY, metaclass=_SameClass):  # type: ignore[misc, valid-type]
    """``functools.cached_property`` that records the value it computes (later reads bypass it)."""

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        value = super().__get__(instance, owner)
        if instance is None or _atomic(value):
            return value
        led = _ledger.current
        if led is not None and led.recording:
            try:
                _computed(led, self, instance, value)
            except Exception:  # pragma: no cover - aliascheck's own failure must not reach the caller
                pass
        return value


_WatchedProperty.__name__ = _WatchedProperty.__qualname__ = "cached_property"
_WatchedProperty.__module__ = "functools"


def _watched_property(prop: Any) -> Any:
    new = object.__new__(_WatchedProperty)
    new.__dict__.update(vars(prop))
    return new


def _computed(led: Any, prop: Any, instance: Any, value: Any) -> None:
    name = prop.attrname
    if not name or not mutability.plain_data(value) or _store(value) or not _in_scope(prop.func):
        return
    cls = type(instance)
    if _maintained(cls, name, prop.func):
        return
    recs = _for(led)
    key = (id(instance), name)
    with recs.lock:
        known = recs.properties.get(key)
        if known is not None and known.value is value:
            return
    def died(_: Any) -> None:
        _property_died(led, recs, key)

    try:
        attrs = vars(instance)
        ref = weakref.ref(instance, died)
    except TypeError:  # no weak reference: the instance's death could not be told
        return
    rec = _Property()
    rec.ref, rec.attrs, rec.name, rec.value = ref, attrs, name, value
    rec.fp = fingerprint(value)
    rec.owner = f"{qualname_of(cls)}.{name} (cached_property)"
    rec.label = f"{led.label(instance)}.{name}"
    rec.origin = _where(prop.func)
    rec.frames = sites.capture()
    led.note_handover(rec.owner)
    if _verifiable(led, recs, rec.owner, rec.fp, rec.frames):
        with recs.lock:
            recs.properties[key] = rec


def _property_died(led: Any, recs: _Records, key: tuple[int, str]) -> None:
    with recs.lock:
        rec = recs.properties.pop(key, None)
    if rec is not None and led.recording and led.test == recs.test:
        try:
            _judge_property(led, rec)
        except Exception:  # pragma: no cover - a weakref callback must not print aliascheck's errors
            pass


def _judge_property(led: Any, rec: _Property) -> None:
    if rec.attrs.get(rec.name) is not rec.value:  # rebound or invalidated: a new value, not an edit
        return
    fp = fingerprint(rec.value)
    if _changed(rec.fp, fp):
        site, stack = rec.frames.text()
        led.report("mutation", diff(rec.fp, fp, collapse=True, reads=True), owner=rec.owner, label=rec.label,
                   site=site, stack=stack, check="cache", origin=rec.origin)


_maintained_cache: dict[tuple[type, str], bool] = {}


def _maintained(cls: type, name: str, getter: Any) -> bool:
    """Whether *cls*'s own methods edit or rebind ``self.<name>``: state the instance maintains."""
    key = (cls, name)
    known = _maintained_cache.get(key)
    if known is None:
        codes = [c for klass in cls.__mro__[:-1] for v in vars(klass).values() for c in _codes(v, getter)]
        known = _maintained_cache[key] = any(_edits(code, name) for code in codes)
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


def _edits(code: Any, name: str) -> bool:
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
        if ins.opname in ("STORE_ATTR", "DELETE_ATTR") and ins.argval == name:
            return True
        if previous is not None and previous.opname in ("LOAD_ATTR", "LOAD_METHOD") and previous.argval == name:
            loaded_line = line
            if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in _MUTATORS:
                return True
        if ins.opname in ("STORE_SUBSCR", "DELETE_SUBSCR") and loaded_line == line:
            return True
        previous = ins
    return False


# -- copy.copy and dataclasses.replace ---------------------------------------------
def _copying(original: Any, kind: str) -> Any:
    @functools.wraps(original)
    def copying(obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        result = original(obj, *args, **kwargs)
        led = _ledger.current
        if led is None or not led.recording or result is obj or _atomic(obj) or isinstance(obj, mutability.CONTAINERS):
            return result
        try:
            _copied(led, obj, result, kind, sys._getframe(1))
        except Exception:  # pragma: no cover - aliascheck's own failure must not reach the caller
            pass
        return result

    return copying


def _copied(led: Any, obj: Any, new: Any, kind: str, caller: Any) -> None:
    cls = type(obj)
    if not (cls.__weakrefoffset__ and cls.__dictoffset__ and type(new).__weakrefoffset__
            and type(new).__dictoffset__):
        return
    if not _scopes or not _scopes[-1](caller.f_code.co_filename):
        return  # a library copying its own objects
    ours, theirs = vars(obj), vars(new)
    shared = []
    for name, value in theirs.items():
        if (ours.get(name) is value and mutability.plain_data(value)
                and not isinstance(getattr(cls, name, None), _CACHED_PROPERTY)):
            shared.append((name, value, fingerprint(value)))
    if not shared:
        return
    recs = _for(led)
    pair = _Pair()
    pair.dicts, pair.shared, pair.kind, pair.done = (ours, theirs), shared, kind, False
    pair.owner = f"{qualname_of(cls)} ({kind})"
    pair.label = led.label(obj)
    pair.frames = sites.capture()
    led.note_handover(pair.owner)

    def died(_: Any) -> None:
        with recs.lock:
            recs.pairs.pop(id(pair), None)
        if not pair.done and led.recording and led.test == recs.test:
            try:
                _judge_pair(led, pair, "copy")
            except Exception:  # pragma: no cover - a weakref callback must not print aliascheck's errors
                pass
        pair.done = True

    pair.refs = (weakref.ref(obj, died), weakref.ref(new, died))
    with recs.lock:
        recs.pairs[id(pair)] = pair


def _changes(pair: _Pair) -> list[tuple[str, list[Change]]]:
    ours, theirs = pair.dicts
    out = []
    for name, value, before in pair.shared:
        if ours.get(name) is value and theirs.get(name) is value:  # still shared by both
            after = fingerprint(value)
            if _changed(before, after):
                out.append((name, [Change(f".{name}{c.path}", c.before, c.after, c.kind, c.text)
                                   for c in diff(before, after, collapse=True, reads=True)]))
    return out


def _judge_pair(led: Any, pair: _Pair, check: str) -> None:
    pair.done = True
    cls_name = pair.owner.partition(" ")[0].rpartition(".")[2]
    found, pair.dicts, pair.shared = _changes(pair), ({}, {}), []  # the dead one's attributes are let go
    site, stack = pair.frames.text() if found else ("", ())
    for name, changes in found:
        led.report("mutation", changes, owner=pair.owner, label=pair.label, site=site, stack=stack,
                   check=check, shares=f"{cls_name}.{name}")


# -- installing, scanning, teardown ------------------------------------------------
@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    scope = Discovery("all" if options.discover == "all" else "project", options.roots or (os.getcwd(),))
    _scopes.append(scope.in_scope)
    undos = [
        patch(functools, "lru_cache", _lru_cache),
        patch(functools, "cache", _cache),
        patch(functools, "cached_property", lambda original: _WatchedProperty),
        patch(_copy, "copy", lambda original: _copying(original, "copy.copy")),
        patch(dataclasses, "replace", lambda original: _copying(original, "dataclasses.replace")),
    ]
    undos += _scan(scope.in_scope)

    def undo() -> None:
        undo_all(undos)()
        _scopes.remove(scope.in_scope)

    return undo


def _scan(in_scope: Callable[[str], bool]) -> list[Callable[[], None]]:
    """Rebind what the project's modules imported before the install (names, caches, properties)."""
    names = {id(getattr(m, n).__aliascheck_original__): getattr(m, n)
             for m, n in ((functools, "lru_cache"), (functools, "cache"), (_copy, "copy"), (dataclasses, "replace"))
             if hasattr(getattr(m, n), "__aliascheck_original__")}
    names[id(_CACHED_PROPERTY)] = functools.cached_property
    made: dict[int, Any] = {}
    undos = []
    for module, items in project_namespaces(in_scope):
        for name, value in items:
            new = names.get(id(value)) or _replacement(value, made)
            if new is not None and new is not value:
                undos.append(rebind(module, name, value, new))
            if isinstance(value, type) and value.__module__ == module.__name__:
                for attr, member in list(vars(value).items()):
                    new = _replacement(member, made)
                    if new is not None:
                        undos.append(rebind(value, attr, member, new))
    return undos


def _replacement(value: Any, made: dict[int, Any]) -> Any:
    if type(value) is _LRU_TYPE and _in_scope(value):
        if id(value) not in made:
            params = value.cache_parameters()
            kind = "cache" if params["maxsize"] is None and not params["typed"] else "lru_cache"
            made[id(value)] = None if params["maxsize"] == 0 else _watched(value, value.__wrapped__, kind, False)
        return made[id(value)]
    if type(value) is _CACHED_PROPERTY and _in_scope(getattr(value, "func", None)):
        return made.setdefault(id(value), _watched_property(value))
    return None


@hookimpl
def aliascheck_teardown(ledger: Any) -> None:
    with _records_lock:
        recs = _records.pop(ledger, None)
    if recs is None or recs.test != ledger.test:
        return
    with recs.lock:
        handouts = list(recs.handouts.values())
        properties = list(recs.properties.values())
        pairs = list(recs.pairs.values())
        recs.handouts.clear()
        recs.properties.clear()
        recs.pairs.clear()
    for rec in handouts:
        if not rec.flagged:
            fp = fingerprint(rec.obj)
            ledger.note_checked()
            if _changed(rec.fp, fp):
                _report_handout(ledger, rec, fp, "cache")
    for prop in properties:
        if prop.ref() is not None:
            ledger.note_checked()
            _judge_property(ledger, prop)
    pending = [p for p in pairs if not p.done]
    if any(_changes(p) for p in pending):
        gc.collect()  # an original that is only garbage in a cycle is judged at its death, not here
    for pair in pending:
        if not pair.done and all(ref() is not None for ref in pair.refs):
            ledger.note_checked()
            _judge_pair(ledger, pair, "copy-teardown")
        pair.done, pair.dicts, pair.shared = True, ({}, {}), []
