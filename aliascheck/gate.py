"""The questions marked code asks at every marked statement, each in one call.

- :func:`keep`: after ``keeper.append(value)``, ``keeper[k] = value`` or ``keeper.a = value``,
  could :func:`aliascheck.boundary.runtime.kept` record or judge anything? Not for an atom, a tuple of
  atoms, or a short dict or list of atoms that only the keeper holds (kept into anything but an
  array or tensor), unless the keeper itself is watched (part of something recorded). A short set of
  atoms the keeper alone holds, the same.
  Asked with the statement's loop site and its own site when the value came from a loop: an item
  of a loop over the project's own generator or over a parameter a project caller passed (the loop
  site in ``FED``), or the parameter itself (site -2, the caller's code in ``CALLERS``), of a type
  the runtime takes by id (``HELD``: no array), kept into something unwatched that is no array,
  and not the object the site kept last, becomes the site's last (``SEEN[site] = Last((id(value),
  1, False))``): no call.
- :func:`receiver`: after ``x.y.resize(n)`` (an in-place method of an attribute's value, caught
  as the bound method), the object written.
- :func:`watching`: is an object watched (``x.extend(...)`` on something recorded is a write the
  runtime looks at)? :func:`watch` and :func:`unwatch` are the runtime's only ways to change the set
  of watched ids, so that the compiled twin's filter (a bitmap of addresses, asked before the set:
  no int is built for an object nobody watches) stays exact.
- :func:`loop`: ``for x in iterable`` starts. Anything but a generator: the loop's site is no
  longer fed by a project generator, and the iterable is returned as it is. A generator goes to
  the runtime's own look (:func:`aliascheck.boundary.runtime.generator_loop`).

Both are asked so often (a BFS asks four times per node) that their cost is the marking's cost on
a hot loop. They are written twice, as coverage.py writes its tracer twice: ``_gate.c``, compiled
at install when a compiler is there, and this module, the reference, used when the extension is
absent (or when ``ALIASCHECK_GATE=python`` asks for it). ``tests/test_gate.py`` holds the two to
the same answers.

Neither calls anything of the program's: values are looked at through their exact type, their
reference count, their length and their items' exact types, all read at C level. A type is looked
up in a set by its id, never by its own hash (a metaclass may define ``__hash__``).
"""

from __future__ import annotations

import importlib
import os
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

_ATOM_IDS: frozenset[int] = frozenset()
_BUFFERS: set[type] = set()
_WATCHED: set[int] = set()
_FED: set[int] = set()
_HELD: set[type] = set()
_SEEN: dict[int, Any] = {}
_Last: Any = tuple
_NOLAST: Any = (None,)
_WIDTH = 0
_generator_loop: Callable[..., Any] = lambda iterable, site, passed=False: iterable  # noqa: E731
_UNBOUND: set[type] = set()
_UNPASSED: set[type] = set()
_QUIET: dict[int, Any] = {}
_PENDING: dict[int, Any] = {}
_OWN: set[type] = set()
_CLEAN: set[int] = set()  # ids handed out (returned, yielded) and not written since
_CALLERS: set[int] = set()  # ids of the project's code objects seen calling a keeping function


def configure(atoms: frozenset[type], buffers: set[type], watched: set[int], fed: set[int], held: set[type],
              seen: dict[int, Any], last: type, width: int, generator_loop: Callable[..., Any]) -> None:
    """The runtime's own sets and its SEEN (read live, never copied), the type of SEEN's entries, and
    its look at a generator loop."""
    global _ATOM_IDS, _BUFFERS, _WATCHED, _FED, _HELD, _SEEN, _Last, _NOLAST, _WIDTH, _generator_loop
    _ATOM_IDS = frozenset(map(id, atoms))
    _BUFFERS, _WATCHED, _FED, _HELD, _SEEN, _Last = buffers, watched, fed, held, seen, last
    _NOLAST, _WIDTH, _generator_loop = (None,), width, generator_loop


def configure_calls(unbound: set[type], unpassed: set[type], quiet: dict[int, Any], pending: dict[int, Any],
                    own: set[type] | None = None, clean: set[int] | None = None,
                    callers: set[int] | None = None) -> None:
    """The runtime's learnt types (a name bound to one, or passed, is never looked at), its quiet
    callees (site -> a weak reference to the one callee there that kept nothing), its pending
    calls (site -> what :func:`aliascheck.boundary.runtime.before` recorded) and the project's own types
    (an object of one kept is the project's structure: :func:`keep` asks only whether the keeper is
    watched), the ids handed out and not written since (:func:`refilled` answers no) and the ids of
    the project's code seen calling a function that keeps its parameter (:func:`keep`), read live."""
    global _UNBOUND, _UNPASSED, _QUIET, _PENDING, _OWN, _CLEAN, _CALLERS
    _UNBOUND, _UNPASSED, _QUIET, _PENDING = unbound, unpassed, quiet, pending
    _OWN = own if own is not None else set()
    _CLEAN = clean if clean is not None else set()
    _CALLERS = callers if callers is not None else set()


def _hashed_as_type(kind: type) -> bool:
    """A type whose metatype keeps ``type``'s hash: looked up in a set of types without running code."""
    meta = type(kind)
    return meta is type or meta.__hash__ is type.__hash__


def _atoms_or_own(items: Any, _getrefcount: Any = sys.getrefcount) -> bool:
    """Every item an atom, an object of the project's own type (``OWN``), or an empty list, dict or set
    nothing else refers to (``{"i": i, "tags": []}``: new, only this container holds it)."""
    ids = _ATOM_IDS
    for item in items:
        kind = type(item)
        if id(kind) in ids or (_OWN and _hashed_as_type(kind) and kind in _OWN):
            continue
        # The container's slot, this loop's name, getrefcount's argument (the compiled gate counts 1).
        if (kind is list or kind is dict or kind is set) and not item and _getrefcount(item) <= 3:
            continue
        return False
    return True


def _from_project_caller() -> bool:
    """The marked function that asks (keep's caller) was called by project code the runtime has seen."""
    if not _CALLERS:
        return False
    caller = sys._getframe(2).f_back  # never raises: a marked function run with no caller has None here
    return caller is not None and id(caller.f_code) in _CALLERS


def _buffer_keeper(keeper: Any) -> bool:
    """An array or tensor (or a type not hashed here: the runtime decides)."""
    kind = type(keeper)
    return not _hashed_as_type(kind) or kind in _BUFFERS


def keep(value: Any, keeper: Any, watch: bool = True, loop_site: int | None = None, site: int = 0,
         _getrefcount: Any = sys.getrefcount) -> bool:
    """Does the keep of *value* into *keeper* need :func:`aliascheck.boundary.runtime.kept`? *watch*: a
    write into *keeper* may matter (False for a container the function made and has not let out);
    *loop_site*, *site*: the value is an item of that loop, kept at *site* (see the module)."""
    kind = type(value)
    if (loop_site is not None and (loop_site in _FED or (loop_site == -2 and _from_project_caller()))
            and _hashed_as_type(kind) and kind in _HELD
            and id(keeper) not in _WATCHED and not _buffer_keeper(keeper) and _SEEN.get(site, _NOLAST)[0] != id(value)):
        _SEEN[site] = _Last((id(value), 1, False))
        return False
    # The caller's reference, this frame's, getrefcount's argument's: 4 when only the keeper holds it
    # besides the marked code's own name or temporary (the compiled gate counts 3 for the same case).
    if (id(kind) in _ATOM_IDS or (kind is tuple and _atoms_or_own(value)) or (
            (kind is list or kind is dict or kind is set) and _getrefcount(value) <= 4 and len(value) <= _WIDTH
            and not _buffer_keeper(keeper) and _atoms_or_own(value.values() if kind is dict else value))
            or (_OWN and _hashed_as_type(kind) and kind in _OWN)):
        return watch and bool(_WATCHED) and id(keeper) in _WATCHED
    return True


def receiver(method: Any, _bound: tuple[type, ...] = (types.MethodType, types.BuiltinMethodType)) -> Any:
    """The object a bound method is bound to (``x.resize`` -> ``x``), read from the method object
    itself; None for any other callable (its ``__self__`` would be the program's attribute)."""
    return method.__self__ if type(method) in _bound else None


def watching(obj: Any) -> bool:
    """Is *obj* watched (a part of something recorded, :func:`watch`)?"""
    return bool(_WATCHED) and id(obj) in _WATCHED


def watch(ids: Any) -> None:
    """From now on, the objects of these ids are watched. The runtime's only way to add to the set:
    the compiled twin keeps a filter beside it."""
    _WATCHED.update(ids)


def unwatch() -> None:
    """Nothing is watched any more."""
    _WATCHED.clear()


def buffer(obj: Any) -> bool:
    """Is *obj* an array or tensor (a type in the runtime's BUFFERS)?"""
    kind = type(obj)
    return _hashed_as_type(kind) and kind in _BUFFERS


def buffer_or_watched(value: Any, keeper: Any) -> bool:
    """:func:`buffer` of *value* or :func:`watching` *keeper* (or *value*), in one call: a write into an
    array or tensor, or into something recorded (``buffer_or_watched(x, x)`` after ``x.extend(...)``), or
    a keep of a watched value (one message object several receivers took)."""
    return buffer(value) or watching(keeper) or (value is not keeper and watching(value))


def returning(value: Any, _getrefcount: Any = sys.getrefcount) -> bool:
    """``return value``: an array or tensor that something besides the function's own name refers
    to (an attribute, a global, a closure), one it may return again? A new one is never asked about.
    The caller's name or temporary, this frame's, getrefcount's argument: 3 for a new one (the
    compiled gate counts 2)."""
    return _getrefcount(value) > 3 and buffer(value)


def refilled(value: Any, anyhow: bool = False, _getrefcount: Any = sys.getrefcount) -> bool:
    """``return x`` or ``yield x`` of what the function itself writes into in place (the rewriter
    pairs the two in the source): is *value* a dict, list, set or bytearray (exact types) or an array
    or tensor, that something besides the function's own name refers to (as :func:`returning`)?
    *anyhow*: a generator's yield of a name its loop does not bind again, asked whatever its count."""
    kind = type(value)
    if not (kind is dict or kind is list or kind is set or kind is bytearray or buffer(value)):
        return False
    if _CLEAN and id(value) in _CLEAN:
        return False  # handed out before and not written since: no refill to tell
    return anyhow or _getrefcount(value) > 3


def bind(value: Any, *receiver: Any) -> bool:
    """After ``name = call(...)`` (``name = obj.method(...)``: *receiver* is ``obj``; for ``name =
    obj.a.b.method(...)``, ``obj, "a", "b"``, read again as the statement read it, running nothing of the
    program's), could :func:`aliascheck.boundary.runtime.bound` judge anything? Not for a type it learnt
    it never does, nor for a method of an atom (``line.split()`` hands out nothing live)."""
    kind = type(value)
    if _hashed_as_type(kind) and kind in _UNBOUND:
        return False
    if len(receiver) > 1:
        owner = receiver[0]
        for name in receiver[1:]:
            owner = callee_of(owner, name)
            if owner is None:
                return True
        return id(type(owner)) not in _ATOM_IDS
    return not (receiver and id(type(receiver[0])) in _ATOM_IDS)


def passes(site: int, callee: Any, *names: Any) -> bool:
    """Before a statement whose calls take *names*: could :func:`aliascheck.boundary.runtime.before` look at
    anything? Not when every name's type is one it never does, nor when *callee* (the one call's
    callee, None when there are several) is the one that kept nothing at this site before."""
    for kind in map(type, names):
        if not (_hashed_as_type(kind) and kind in _UNPASSED):
            break
    else:
        return False
    if callee is None:
        return True
    ref = _QUIET.get(site)
    if type(ref) is tuple and len(ref) == 4:  # ``obj.name(...)``: the function obj's class binds, unhidden
        kind, name, function, _ = ref
        return kind() is not type(callee) or instance_method(callee, name) is not function()
    if type(ref) is tuple:  # ``owner.name(...)``: the owner's entry for the name, read as type() reads it
        owner, name, function = ref
        return owner() is not callee or _entry(callee, name) is not function()
    return type(ref) is not weakref.ReferenceType or ref() is not callee


_generic_getattr = object.__getattribute__


def instance_method(obj: Any, name: str) -> Any:
    """The plain function ``obj.name`` binds, found as the interpreter finds it and running nothing of
    the program's; None when that cannot be told so. Only for a class whose attribute lookup is the
    generic one (no ``__getattribute__`` nor ``__getattr__`` of its own along the MRO): its entry for
    *name* must be a plain function (no descriptor of the program's runs), and the generic lookup,
    which looks at the instance's own attributes first (read in place, not materialised), must give
    that function bound to *obj*: an attribute of the instance's own hides it."""
    found = None
    for base in _MRO(type(obj)):
        space = _CLASS_DICT(base)
        if found is None:
            found = space.get(name)
        if base is not object and ("__getattribute__" in space or "__getattr__" in space):
            return None
    if type(found) is not types.FunctionType:
        return None
    try:
        bound = _generic_getattr(obj, name)
    except Exception:
        return None
    return found if type(bound) is types.MethodType and bound.__func__ is found and bound.__self__ is obj else None


_MRO = type.__dict__["__mro__"].__get__  # read as type itself reads them: no metaclass's code runs
_CLASS_DICT = type.__dict__["__dict__"].__get__
_type_getattr = type.__getattribute__
# Descriptors whose ``__get__`` is the interpreter's own C code: binding one runs nothing of the program's.
_C_DESCRIPTORS = frozenset({types.FunctionType, staticmethod, classmethod, types.MethodDescriptorType,
                            types.ClassMethodDescriptorType, types.WrapperDescriptorType,
                            types.BuiltinFunctionType, types.MemberDescriptorType})


def callee_of(owner: Any, name: str) -> Any:
    """What ``owner.name`` evaluates to, found as the interpreter finds it and running nothing of the
    program's (a marked statement's callee, read just before the statement runs, so that the statement
    need not catch it in a temporary its frame's locals would show); None when that cannot be told so:
    a module's ``__getattr__``, a class's own ``__getattribute__`` or ``__getattr__`` along its MRO, a
    metaclass's, or a descriptor of the program's (a property) on the way."""
    kind = type(owner)
    if kind is types.ModuleType:
        return vars(owner).get(name)
    if issubclass(kind, type):
        if not _generic(kind, name, type):
            return None
        found = _class_entry(owner, name)
        if found is _ABSENT or not _plain_entry(found):
            return None
        return _type_getattr(owner, name)
    if not _generic(kind, name, object):
        return None
    found = _class_entry(kind, name)
    if found is not _ABSENT and not _plain_entry(found):
        return None
    try:
        return _generic_getattr(owner, name)  # the instance's own dict first, read in place
    except Exception:
        return None


def _class_entry(kind: type, name: str) -> Any:
    """The first entry for *name* along *kind*'s MRO, None included (``_width = None``); _ABSENT if none."""
    for base in _MRO(kind):
        space = _CLASS_DICT(base)
        if name in space:
            return space[name]
    return _ABSENT


_ABSENT = object()


def _generic(kind: type, name: str, root: type) -> bool:
    """*kind*'s attribute lookup is *root*'s own, and no entry of *name* along it is a descriptor of the
    program's (for a metaclass: ``type``'s lookup of the class's attributes)."""
    for base in _MRO(kind):
        if base is root or base is object:
            continue
        space = _CLASS_DICT(base)
        if "__getattribute__" in space or "__getattr__" in space:
            return False
        if root is type and name in space:
            return False  # a metaclass's own entry (a property of the class) comes first
    return True


def _plain_entry(found: Any) -> bool:
    """An entry of a class whose binding runs nothing of the program's: a function, a C descriptor, or
    an object whose type has no ``__get__`` (a nested class, a plain callable object)."""
    kind = type(found)
    if kind in _C_DESCRIPTORS:
        return True
    return not any("__get__" in _CLASS_DICT(base) for base in _MRO(kind))


def _entry(owner: Any, name: str) -> Any:
    """What ``owner.name`` finds without running anything of the program's: a module's dict entry, or
    the first entry along a class's MRO (a classmethod's or staticmethod's function); else None."""
    if type(owner) is types.ModuleType:
        return vars(owner).get(name)
    if issubclass(type(owner), type):  # not isinstance: an object's ``__class__`` is not asked
        for base in _MRO(owner):
            found = _CLASS_DICT(base).get(name)
            if found is not None:
                return found.__func__ if type(found) in (classmethod, staticmethod) else found
    return None


def pended(site: int) -> bool:
    """Did :func:`aliascheck.boundary.runtime.before` record something at *site* for the statement's end?"""
    return site in _PENDING


def loop(iterable: Any, site: int, passed: bool = False, _generator: type = types.GeneratorType) -> Any:
    """``for x in iterable`` starts at *site* (*passed*: over the function's own parameter): returns
    *iterable* itself."""
    if type(iterable) is _generator:
        return _generator_loop(iterable, site, passed) if passed else _generator_loop(iterable, site)
    if passed:  # the caller decides: one the runtime knows for the project's, or the runtime's question
        caller = sys._getframe(1).f_back if _CALLERS else None  # the marked function's caller
        if caller is not None and id(caller.f_code) in _CALLERS:
            _FED.add(site)
            return iterable
        return _generator_loop(iterable, site, passed)
    if _FED:
        _FED.discard(site)
    return iterable


def _compiled_twin() -> Any:
    """``aliascheck._gate``, or None: not built (no compiler at install), or the reference asked for
    (``ALIASCHECK_GATE=python``, as ``COVERAGE_CORE=pytrace`` asks for coverage.py's)."""
    if os.environ.get("ALIASCHECK_GATE", "") == "python":
        return None
    try:
        return importlib.import_module("aliascheck._gate")
    except ImportError:
        return None


_compiled: Any = _compiled_twin()

COMPILED = _compiled is not None
