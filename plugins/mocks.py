"""unittest.mock adapter: a mock keeps every call's arguments (``call_args``, ``call_args_list``,
``mock_calls``), and compares them when the test reads them. A list or dict the caller changes after
the call (``self.send(self.pending); self.pending.clear()``) is then read as it is now, not as it was
passed: the test asserts on the wrong value (the documented gotcha, "Coping with mutable arguments").

Each call's plain-data arguments (dicts, lists, sets, deques of atoms and of each other, as ``==``
compares them) are fingerprinted as the mock's call returns (after its ``side_effect``, whose writes
are the call's own); the recorded call is judged when the test reads the mock's calls (the properties,
and the assertions that read them), against the arguments the record holds then. Other arguments are
compared by ``==`` as the object they are (identity, unless the class says otherwise): not judged.
Nothing of the program's is held: a record keeps the call's id and its arguments' fingerprint, and the
call is found again in the mock's own list. Emptied at each test's end.
"""

from __future__ import annotations

import collections
import functools
import sys
import threading
import types
import unittest.mock as _mock
import weakref
from collections.abc import Callable
from typing import Any

from aliascheck.plugins.message_log import _checked, _recording
from aliascheck.plugins.message_log import _count as _counted

import aliascheck.judge as judge
import aliascheck.mutability as mutability
import aliascheck.sites as sites
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import patch, undo_all
from aliascheck.kinds import MOCK, MOCK_READ
from aliascheck.records import TEARDOWN, Record, handed

REQUIRES = "unittest.mock"
_FILES = frozenset({_mock.__file__})  # the mock's own frames: not the caller
_ATOMS = mutability.ATOMS
_EXACT = (dict, list, set, collections.deque, collections.OrderedDict, collections.defaultdict, collections.Counter)
_EXACT_SET = frozenset(_EXACT)
_DATA_WIDTH = 256  # items looked at in one argument
_MOST = 1 << 12  # calls recorded in one test

# id(mock) -> (a weak reference to it, [(id of its recorded call, the call's record)]).
_calls: dict[int, tuple[Any, list[tuple[int, Record]]]] = {}
_count = [0]
# The mock's own readers of its lists: recording a call, resetting. Every other read is the test's.
_OWN = frozenset({_mock.CallableMixin._increment_mock_call.__code__,  # type: ignore[attr-defined]
                  _mock.NonCallableMock.reset_mock.__code__})


def _data(value: Any, depth: int = 3) -> bool:
    """Plain data all the way down, compared by value: atoms and exact containers of them (C-level reads)."""
    kind = type(value)
    if kind in _ATOMS:
        return True
    if not depth:
        return False
    if kind in (dict, collections.OrderedDict, collections.defaultdict, collections.Counter):
        if len(value) > _DATA_WIDTH:
            return False
        return all(_data(k, depth - 1) for k in dict.keys(value)) and all(
            _data(v, depth - 1) for v in dict.values(value))
    if kind in (list, set, collections.deque, tuple, frozenset):
        return len(value) <= _DATA_WIDTH and all(_data(v, depth - 1) for v in value)
    return False


def _view(call: Any) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The call's judged arguments (mutable plain data; any other is None), or None if there is none."""
    args, kwargs = tuple.__getitem__(call, 0), tuple.__getitem__(call, 1)
    if type(args) is not tuple or type(kwargs) is not dict:
        return None
    seen = False
    out_args = []
    for a in args:
        keep = type(a) in _EXACT and _data(a)
        seen = seen or keep
        out_args.append(a if keep else None)
    out_kwargs = {}
    for k, v in kwargs.items():
        keep = type(v) in _EXACT and _data(v)
        seen = seen or keep
        out_kwargs[k] = v if keep else None
    return (tuple(out_args), out_kwargs) if seen else None


def _own_list(mock: Any) -> Any:
    """The mock's own call list, from its instance dict (no attribute of a mock is read: it would make one)."""
    try:
        own = object.__getattribute__(mock, "__dict__")
    except Exception:
        return None
    delegate = own.get("_mock_delegate")
    if delegate is not None:  # an autospec'd function's mock: its calls are listed on the function
        if type(delegate) is not types.FunctionType:
            return None
        own = delegate.__dict__
        listed = own.get("call_args_list")
        return listed if isinstance(listed, list) else None
    listed = own.get("_mock_call_args_list")
    return listed if isinstance(listed, list) else None


def _mock_call(original: Any) -> Any:
    """``CallableMixin._mock_call``: the call's side effects run in it; its arguments are recorded as
    it returns (or raises: a side effect's exception propagates unchanged)."""

    @functools.wraps(original)
    def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        # Only a call given a container can be judged: the common call (no arguments, atoms, objects) is
        # told by type alone.
        judged = (any(type(a) in _EXACT_SET for a in args) or any(type(v) in _EXACT_SET for v in kwargs.values())) \
            and _recording() is not None
        listed = _own_list(self) if judged else None
        this = list.__getitem__(listed, -1) if listed else None
        try:
            return original(self, *args, **kwargs)
        finally:
            if this is not None:
                _record(self, this)
            this = listed = None

    return call


def _record(mock: Any, call: Any) -> None:
    """Record *call*'s plain-data arguments as they are now, the mock's call done. Never raises."""
    led = _recording()
    try:
        if led is None or _count[0] >= _MOST:
            return
        view = _view(call)
        if view is None:
            return
        where = sites.sender(_FILES, 3)
        if where is None:
            return
        flat = _flat(view)
        fp = judge.FLAT if flat is not None else judge.message_value(view)[1]
        name = _name(mock)
        rec = handed("call", MOCK, name, where, threading.current_thread(), None, fp, TEARDOWN)
        rec.flat, rec.ledger = flat, led
        entry = _calls.get(id(mock))
        if entry is None or entry[0]() is not mock:
            entry = _calls[id(mock)] = (weakref.ref(mock), [])
        entry[1].append((id(call), rec))
        _count[0] += 1
        _counted(led, MOCK)
    except Exception as exc:  # aliascheck's own bug must never break the call
        judge.internal(led, MOCK, exc)


def _flat(view: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
    """The view with a shallow copy of each judged argument, when each is a dict or list of atoms (the
    common call: compared at each read at C speed, pickled only to tell a change); else None."""
    args, kwargs = view
    copies: list[Any] = []
    for a in (*args, *kwargs.values()):
        if a is None:
            copies.append(None)
        elif type(a) is dict and _ATOMS.issuperset(map(type, a.values())) and _ATOMS.issuperset(map(type, a)):
            copies.append(a.copy())
        elif type(a) is list and _ATOMS.issuperset(map(type, a)):
            copies.append(a[:])
        else:
            return None
    return tuple(copies[:len(args)]), dict(zip(kwargs, copies[len(args):], strict=True))


def _same(flat: Any, view: tuple[tuple[Any, ...], dict[str, Any]]) -> bool:
    """Whether each judged argument holds what its flat copy holds (C-level reads)."""
    then_args, then_kwargs = flat
    args, kwargs = view
    if len(args) != len(then_args) or then_kwargs.keys() != kwargs.keys():
        return False
    pairs = zip((*then_args, *then_kwargs.values()), (*args, *(kwargs[k] for k in then_kwargs)), strict=True)
    return all(then is now or (then is not None and now is not None and judge.same_flat(then, now))
               for then, now in pairs)


def _name(mock: Any) -> str:
    try:
        own = object.__getattribute__(mock, "__dict__")
        return str(own.get("_mock_name") or own.get("_mock_new_name") or type(mock).__name__)
    except Exception:
        return type(mock).__name__


def _judge(mock: Any, last: bool = False) -> None:
    """The test reads *mock*'s recorded calls (*last*: only its last call, ``call_args``): each one whose
    plain-data arguments changed since the call is a finding (once). Never raises."""
    entry = _calls.get(id(mock))
    if entry is None or entry[0]() is not mock:
        return
    listed = _own_list(mock)
    if listed is None:
        return
    try:
        present = {id(c): c for c in (list.__getitem__(listed, slice(-1, None)) if last else list.__iter__(listed))}
        for key, rec in entry[1]:
            call = present.get(key)
            if call is None or rec.flagged:  # reset since, or judged
                continue
            view = _view(call)
            led = rec.ledger
            if view is None or not led.recording:
                continue
            _checked(led)
            if rec.flat is not None:
                if _same(rec.flat, view):
                    continue
                judge.message_changed(rec, MOCK_READ, now=(view, judge.FLAT))
            else:
                judge.message_changed(rec, MOCK_READ, now=judge.message_value(view))
    except Exception as exc:  # aliascheck's own bug must never break the read
        judge.internal(entry[1][0][1].ledger if entry[1] else None, MOCK, exc)


class _Read(property):
    """A mock's call property, judging the recorded calls when the test reads them."""


def _reading(original: property, last: bool = False) -> property:
    getter = original.fget
    assert getter is not None

    def get(self: Any) -> Any:
        value = getter(self)
        if _calls and sys._getframe(1).f_code not in _OWN:
            _judge(self, last)
        return value

    return _Read(get, original.fset, original.fdel, original.__doc__)


@hookimpl
def aliascheck_teardown(ledger: Any) -> None:
    """The test ends: its calls' records go (a later test's mock at a reused id is its own)."""
    _calls.clear()
    _count[0] = 0


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    undos = [patch(_mock.CallableMixin, "_mock_call", _mock_call)]
    undos.append(patch(_mock.NonCallableMock, "call_args", functools.partial(_reading, last=True)))  # the last call
    undos += [patch(_mock.NonCallableMock, name, _reading) for name in ("call_args_list", "mock_calls")]
    return undo_all(undos)
