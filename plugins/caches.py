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

import collections
import copy as _copy
import dataclasses
import functools
import gc
import os
import reprlib
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import aliascheck.judge as judge
import aliascheck.ledger as _ledger
import aliascheck.mutability as mutability
import aliascheck.records as records
import aliascheck.sites as sites
from aliascheck.discovery import Discovery
from aliascheck.fingerprint import fingerprint
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import patch, project_namespaces, rebind, undo_all
from aliascheck.records import Record
from aliascheck.shadow import qualname_of

REQUIRES = None
MAX_KEYS = 4096  # stored-value decisions kept per cache (ids of the values, not the arguments)
HIT_CHECK_BYTES = 16 * 1024  # a value whose fingerprint is larger is checked at teardown only, not per hit

_LRU_TYPE = type(functools.lru_cache(lambda: None))  # functools._lru_cache_wrapper
_CLASS_DICT = type.__dict__["__dict__"].__get__
_CACHED_PROPERTY: type = getattr(functools.cached_property, "__aliascheck_original__", functools.cached_property)
_repr = reprlib.Repr()
_repr.maxstring, _repr.maxother, _repr.maxlist, _repr.maxdict = 40, 40, 4, 4

# The innermost installed session's scope: whose code is watched (pytester nests sessions).
_scopes: list[Callable[[str], bool]] = []
_tls = threading.local()


# -- what is judged: aliascheck.judge decides; these read its verdicts -------------------
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


def _shown(arg: Any) -> str:
    """An argument in a report: an atom's own repr (a builtin's, bounded), else its type's name:
    an object's ``__repr__`` is the program's code, which the program did not call here."""
    if type(arg) in mutability.ATOMS or (type(arg) in (tuple, frozenset)
                                          and mutability.ATOMS.issuperset(map(type, arg))):
        return _repr.repr(arg)
    return f"<{type(arg).__qualname__}>"


# -- one ledger's records for the running test --------------------------------------
class _Table:
    """The running test's records (``aliascheck.records.Record``): cache values by id, cached_property
    values by (id(instance), name), copies by id of their record."""

    __slots__ = ("test", "lock", "records", "opaque")

    def __init__(self, test: str | None) -> None:
        self.test = test
        self.lock = threading.RLock()
        self.records: dict[Any, Record] = {}
        self.opaque: set[str] = set()  # owners already said to be unverifiable


# What a call with no arguments may return and still hand out as data: a container, or a tuple holding one.
_CONTAINERS = (dict, list, set, bytearray, tuple, collections.deque)
_tables: weakref.WeakKeyDictionary[Any, _Table] = weakref.WeakKeyDictionary()
_tables_lock = threading.RLock()  # reentrant: see message_log._lock
_last: tuple[Any, _Table | None] = (None, None)  # the last ledger asked for and its table: one read per hit


def _for(led: Any) -> _Table:
    global _last
    last_led, found = _last
    if last_led is led and found is not None and found.test == led.test:
        return found
    with _tables_lock:
        found = _tables.get(led)
        if found is None or found.test != led.test:  # an abandoned test's records are dropped
            found = _tables[led] = _Table(led.test)
        _last = (led, found)
        return found


# -- lru_cache and cache ---------------------------------------------------------------
class _Cache:
    """One watched cache: which of its stored values are judged, by id.

    Every value enters the cache through a miss (:meth:`stored` decides it then), so an id met again
    at a hit is that value or a later one decided anew: the arguments are never hashed again (the
    cache hashed them once; a second ``__hash__`` would be aliascheck's call, not the program's)."""

    def __init__(self, cached: Any, fn: Any, kind: str) -> None:
        self.cached, self.fn = cached, fn
        self.name = f"{getattr(fn, '__module__', '') or ''}.{getattr(fn, '__qualname__', '?')}".lstrip(".")
        self.owner = f"{self.name} ({kind})"
        self.origin = _where(fn)
        self.judged: dict[int, None] = {}  # ids of judged values, oldest first
        self.lock = threading.RLock()  # reentrant: see message_log._lock

    def stored(self, value: Any, keyed: bool = True) -> None:
        """The cache just made *value*: a result is judged, a store is not. Not *keyed* (a call with no
        arguments): an instance is the process's one object of its kind (``@lru_cache def get_settings():
        return Settings()``, configured in place on purpose), a container is still a result."""
        key = id(value)
        with self.lock:
            self.judged.pop(key, None)
            if (mutability.plain_data(value) and not judge.is_store(value)
                    and (keyed or issubclass(type(value), _CONTAINERS))):
                if len(self.judged) >= MAX_KEYS:
                    self.judged.pop(next(iter(self.judged)))
                self.judged[key] = None

    def handed_out(self, led: Any, args: tuple, kwargs: dict, value: Any) -> None:
        if id(value) not in self.judged:
            return
        table = _for(led)
        rec = table.records.get(id(value))
        if rec is None or rec.obj is not value:
            fp, data = judge.cache_value(value)
            with table.lock:
                rec = table.records.get(id(value))
                if rec is not None and rec.obj is value:
                    return  # another thread recorded it meanwhile: its hand-out is the one judged
                rec = records.handed("cache-value", self.owner, self.label(args, kwargs), sites.capture(),
                                     None, value, fp, records.TEARDOWN)
                rec.plain, rec.origin, rec.ledger = data, self.origin, led
                led.note_handover(self.owner)
                if judge.cache_unverifiable(rec, table.opaque):
                    table.records[id(value)] = rec
            return
        if rec.flagged or rec.fp.detail is None or len(rec.fp.detail) > HIT_CHECK_BYTES:
            return  # reported already, or too large to fingerprint on every hit: teardown checks it
        if not judge.cache_value_changed(rec, "cache-hit"):
            # Unchanged: the next edit follows this hand-out. From the very line of the last one (a
            # loop's hits), that one's capture stands: its innermost frame is this caller's.
            caller = sys._getframe(2)  # watched's caller
            frames = rec.where.frames
            if not frames or frames[0][0] is not caller.f_code or frames[0][1] != caller.f_lasti:
                rec.where = sites.capture()

    def label(self, args: tuple, kwargs: dict) -> str:
        shown = [_shown(a) for a in args] + [f"{k}={_shown(v)}" for k, v in kwargs.items()]
        return f"{self.name.rpartition('.')[2]}({', '.join(shown)})"


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
        if not judge.constant(result):
            try:
                if misses >= 0 and info().misses != misses:
                    cache.stored(result, bool(args or kwargs))
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
        if holder and not judge.constant(result):
            try:
                holder[0].stored(result, bool(args or kwargs))
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
        if instance is None or judge.constant(value):
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
    if not name or not mutability.plain_data(value) or judge.is_store(value) or not _in_scope(prop.func):
        return
    cls = type(instance)
    if judge.maintained(cls, name, prop.func) or judge.instance_free(prop.func):
        return
    table = _for(led)
    key = (id(instance), name)
    with table.lock:
        known = table.records.get(key)
        if known is not None and known.obj is value:
            return

    def died(_: Any) -> None:
        _property_died(led, table, key)

    try:
        attrs = vars(instance)
        ref = weakref.ref(instance, died)
    except TypeError:  # no weak reference: the instance's death could not be told
        return
    owner = f"{qualname_of(cls)}.{name} (cached_property)"
    rec = records.handed("cached-property", owner, f"{led.label(instance)}.{name}", sites.capture(), None, value,
                         fingerprint(value, by_identity=True), records.DEATH)  # as judge.cache_value reads one
    rec.owner, rec.keeper, rec.key, rec.origin, rec.ledger = ref, attrs, key, _where(prop.func), led
    led.note_handover(owner)
    if judge.cache_unverifiable(rec, table.opaque):
        with table.lock:
            table.records[key] = rec


def _property_died(led: Any, table: _Table, key: tuple[int, str]) -> None:
    with table.lock:
        rec = table.records.pop(key, None)
    if rec is not None and led.recording and led.test == table.test:
        try:
            judge.property_changed(rec)
        except Exception:  # pragma: no cover - a weakref callback must not print aliascheck's errors
            pass


# -- copy.copy and dataclasses.replace ---------------------------------------------
def _shared(ours: dict[str, Any], theirs: dict[str, Any]) -> list[tuple[str, Any, int]]:
    """The attributes two instances' ``__dict__`` share, each with its reference count as counted here.
    A part only the two instances hold counts :data:`_SHARED_ONLY` (measured once, by this very loop:
    no interpreter's count is assumed); one held by a third object too (a registry's table both
    instances keep a handle to) counts more: that object's, whose changes are its own business."""
    out = []
    for name, value in theirs.items():
        if ours.get(name) is value:
            out.append((name, value, sys.getrefcount(value)))
    return out


def _aliaschecks(value: Any) -> int:
    """References to *value* that aliascheck's boundary holds (the last value a marked line kept)."""
    boundary = sys.modules.get("aliascheck.boundary.runtime")
    return boundary.own_references(value) if boundary is not None and boundary._on else 0


def _calibrated() -> int:
    part: list[Any] = []
    ours, theirs = {"part": part}, {"part": part}
    del part
    return _shared(ours, theirs)[0][2]


_SHARED_ONLY = _calibrated()
def _copying(original: Any, kind: str) -> Any:
    @functools.wraps(original)
    def copying(obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        result = original(obj, *args, **kwargs)
        led = _ledger.current
        if (led is None or not led.recording or result is obj or judge.constant(obj)
                or isinstance(obj, mutability.CONTAINERS)):
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
    for name, value, refs in _shared(ours, theirs):
        # A part the class's own methods write through self (a client's ``self._cache[key] = ...``) is
        # state its instances maintain: a copy sharing it shares it on purpose (one cache, one pool).
        if (mutability.plain_data(value) and not isinstance(getattr(cls, name, None), _CACHED_PROPERTY)
                and (refs <= _SHARED_ONLY or refs - _aliaschecks(value) <= _SHARED_ONLY)
                and not judge.maintained(cls, name, None, rebinds=False)):
            shared.append((name, value, fingerprint(value)))
    if not shared:
        return
    table = _for(led)
    owner = f"{qualname_of(cls)} ({kind})"
    rec = records.handed("copy", owner, led.label(obj), sites.capture(), None, None, judge.FLAT, records.DEATH)
    rec.keeper, rec.parts, rec.ledger = (ours, theirs), shared, led
    led.note_handover(owner)

    def died(_: Any) -> None:
        with table.lock:
            table.records.pop(id(rec), None)
        if not rec.flagged and led.recording and led.test == table.test:
            try:
                judge.copy_changed(rec, "copy")
            except Exception:  # pragma: no cover - a weakref callback must not print aliascheck's errors
                pass
        rec.flagged = True

    rec.key = (weakref.ref(obj, died), weakref.ref(new, died))
    with table.lock:
        table.records[id(rec)] = rec


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
                # its own dict as type reads it: a metaclass's ``__dict__`` property is the program's code
                for attr, member in list(_CLASS_DICT(value).items()):
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
    global _last
    with _tables_lock:
        table = _tables.pop(ledger, None)
        _last = (None, None)
    if table is None or table.test != ledger.test:
        return
    with table.lock:
        found = list(table.records.values())
        table.records.clear()
    for rec in found:
        if rec.kind == "cache-value" and not rec.flagged:
            ledger.note_checked()
            judge.cache_value_changed(rec, "cache")
        elif rec.kind == "cached-property" and rec.owner() is not None:
            ledger.note_checked()
            judge.property_changed(rec)
    pending = [r for r in found if r.kind == "copy" and not r.flagged]
    if any(judge.copy_changes(r) for r in pending):
        gc.collect()  # an original that is only garbage in a cycle is judged at its death, not here
    for rec in pending:
        if not rec.flagged and all(ref() is not None for ref in rec.key):
            ledger.note_checked()
            judge.copy_changed(rec, "copy-teardown")
        rec.flagged, rec.keeper, rec.parts = True, ({}, {}), ()
