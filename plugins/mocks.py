"""unittest.mock adapter: a mock keeps every call's arguments (``call_args``, ``call_args_list``,
``mock_calls``), and compares them when the test reads them. A list or dict the caller changes after
the call (``self.send(self.pending); self.pending.clear()``) is then read as it is now, not as it was
passed: the test asserts on the wrong value (the documented gotcha, "Coping with mutable arguments").

Each call's plain-data arguments (dicts, lists, sets, deques of atoms and of each other, as ``==``
compares them) are copied as the mock's call returns (after its ``side_effect``, whose writes are the
call's own). The recorded call (its ``call_args_list`` entry and its ``mock_calls`` entry) is judged
where the test looks at it:
- compared (``==``, the ``assert_*`` methods): a finding only when the comparison with the arguments
  as passed would have given the other answer, and only when what it is compared with is plain data
  or ``mock.ANY`` (no matcher of the program's is called again);
- its ``args``/``kwargs`` read: a finding when a judged argument changed since.

Objects compared by identity are not judged. Nothing of the program's is held: a record keeps copies
of plain data, and the call is found again by id in the mock's own lists (records are dropped at
``reset_mock``). Emptied at each test's end.
"""

from __future__ import annotations

import collections
import functools
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

# id of a recorded call object (the call_args_list entry, the mock_calls entry) -> (a weak reference to
# its mock, the call's record, the judged arguments as passed: copies, None for any other argument).
_calls: dict[int, tuple[Any, Record, tuple[tuple[Any, ...], dict[str, Any]]]] = {}
_of_mock: dict[int, list[int]] = {}  # id(mock) -> the ids of its recorded call objects
# A spec'd mock compares its calls bound to the spec's signature (``_call_matcher``: a new call object of
# the same arguments): id of that object -> (the object, held so that its id stays its own; the record's
# entry; the recorded call; the call as made, bound alike).
_derived: dict[int, tuple[Any, Any, Any, Any]] = {}
_DERIVED_MOST = 1 << 12
_count = [0]


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
    first = tuple.__len__(call) - 2  # a mock_calls entry leads with the call's name
    args, kwargs = tuple.__getitem__(call, first), tuple.__getitem__(call, first + 1)
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


def _lists(mock: Any) -> tuple[Any, Any]:
    """The mock's own ``call_args_list`` and ``mock_calls`` lists (an autospec'd function's, on the
    function), from instance dicts: no attribute of a mock is read (it would make one)."""
    try:
        own = object.__getattribute__(mock, "__dict__")
    except Exception:
        return None, None
    delegate = own.get("_mock_delegate")
    if delegate is not None:
        if type(delegate) is not types.FunctionType:
            return None, None
        listed, calls = delegate.__dict__.get("call_args_list"), delegate.__dict__.get("mock_calls")
    else:
        listed, calls = own.get("_mock_call_args_list"), own.get("_mock_mock_calls")
    return (listed if isinstance(listed, list) else None), (calls if isinstance(calls, list) else None)


def _mock_call(original: Any) -> Any:
    """``CallableMixin._mock_call``: the call's side effects run in it; its arguments are recorded as
    it returns (or raises: a side effect's exception propagates unchanged)."""

    @functools.wraps(original)
    def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        # Only a call given a container can be judged: the common call (no arguments, atoms, objects) is
        # told by type alone.
        judged = (any(type(a) in _EXACT_SET for a in args) or any(type(v) in _EXACT_SET for v in kwargs.values())) \
            and _recording() is not None
        listed = _lists(self)[0] if judged else None
        this = list.__getitem__(listed, -1) if listed else None
        done, result = False, None
        try:
            result = original(self, *args, **kwargs)
            done = True
            return result
        finally:
            # An async mock's side effect (or wrapped function) runs when the coroutine is awaited, after
            # this: its writes would look like the caller's. Not recorded.
            if this is not None and not (done and _async_effect(self, result)):
                _record(self, this, _last_mock_call(self))
            this = listed = result = None

    return call


def _awaiting(original: Any) -> Any:
    """``AsyncMockMixin._execute_mock_call``: the awaited half of an async mock's call, which adds its
    ``await_args_list`` entry and runs the side effect (or the wrapped function). Recorded as it ends: the
    call's ``call_args_list`` entry too when the side effect's writes kept it from being recorded at the
    call (:func:`_async_effect`)."""

    @functools.wraps(original)
    async def _execute_mock_call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        judged = (any(type(a) in _EXACT_SET for a in args) or any(type(v) in _EXACT_SET for v in kwargs.values())) \
            and _recording() is not None
        try:
            return await original(self, *args, **kwargs)
        finally:
            if judged:
                _record_awaited(self, args, kwargs)

    return _execute_mock_call


_MATCHED_BACK = 16  # entries of a mock's list looked back through for the call just awaited


def _made_with(calls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The last entry of *calls* made with these very arguments (each the same object), or None."""
    if not isinstance(calls, list):
        return None
    for entry in reversed(list.__getitem__(calls, slice(-_MATCHED_BACK, None))):
        if not isinstance(entry, _mock._Call) or tuple.__len__(entry) < 2:
            continue
        n = tuple.__len__(entry)
        then_args, then_kwargs = tuple.__getitem__(entry, n - 2), tuple.__getitem__(entry, n - 1)
        if (type(then_args) is tuple and type(then_kwargs) is dict and len(then_args) == len(args)
                and all(a is b for a, b in zip(then_args, args, strict=True))
                and then_kwargs.keys() == kwargs.keys() and all(then_kwargs[k] is v for k, v in kwargs.items())):
            return entry
    return None


def _record_awaited(mock: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The await of a call given these arguments ended: its ``await_args_list`` entry joins the call's
    record, or the call is recorded now (its side effect's writes done). Never raises."""
    try:
        own = object.__getattribute__(mock, "__dict__")
        awaited = _made_with(own.get("_mock_await_args_list"), args, kwargs)
        if awaited is None or id(awaited) in _calls:
            return
        listed, calls = _lists(mock)
        made = _made_with(listed, args, kwargs)
        known = _calls.get(id(made)) if made is not None else None
        if known is not None:
            _calls[id(awaited)] = known
            _of_mock.setdefault(id(mock), []).append(id(awaited))
        else:
            _record(mock, made if made is not None else awaited, _made_with(calls, args, kwargs),
                    awaited if made is not None else None, depth=4)
    except Exception:  # aliascheck's own failure never reaches the program
        pass


def _async_effect(mock: Any, result: Any) -> bool:
    own = object.__getattribute__(mock, "__dict__")
    return type(result) is types.CoroutineType and (
        own.get("_mock_side_effect") is not None or own.get("_mock_wraps") is not None)


def _last_mock_call(mock: Any) -> Any:
    """The mock's own ``mock_calls`` entry of the call just made (its last), or None."""
    calls = _lists(mock)[1]
    return list.__getitem__(calls, -1) if calls else None


def _record(mock: Any, call: Any, listed_call: Any = None, awaited: Any = None, depth: int = 3) -> None:
    """Record *call*'s plain-data arguments as they are now, the mock's call done (*listed_call*: its
    ``mock_calls`` entry, *awaited*: its ``await_args_list`` entry, judged alike; *depth*: the caller's
    frame, counted from here). Never raises."""
    led = _recording()
    try:
        if led is None or _count[0] >= _MOST:
            return
        view = _view(call)
        if view is None:
            return
        where = sites.sender(_FILES, depth)
        if where is None:
            return
        then = _copied(view)
        # Each judged argument a dict or list of atoms (the common call): its copy is the baseline, compared
        # at C speed at each look and pickled only to tell a change; else fingerprinted.
        flat = then if _flat(view) else None
        fp = judge.FLAT if flat is not None else judge.message_value(view)[1]
        rec = handed("call", MOCK, _name(mock), where, threading.current_thread(), None, fp, TEARDOWN)
        rec.flat, rec.ledger = flat, led
        ref = weakref.ref(mock)
        mine = _of_mock.setdefault(id(mock), [])
        for one in (call, listed_call, awaited):
            if one is not None:
                _calls[id(one)] = (ref, rec, then)
                mine.append(id(one))
        for parent, entry in _parents_entries(mock, call):  # ``manager.mock_calls``: the same call, named
            _calls[id(entry)] = (weakref.ref(parent), rec, then)
            _of_mock.setdefault(id(parent), []).append(id(entry))
        _count[0] += 1
        _counted(led, MOCK)
    except Exception as exc:  # aliascheck's own bug must never break the call
        judge.internal(led, MOCK, exc)


_PARENTS_MOST = 8  # parents looked up from one mock


def _parents_entries(mock: Any, call: Any) -> list[tuple[Any, Any]]:
    """The entries the call just made added to its parents' ``mock_calls`` and ``method_calls`` (up the
    ``_mock_new_parent`` chain, as the mock adds them): each the last of its list, holding the very
    arguments tuple of *call*. From instance dicts: no attribute of a mock is read."""
    args = tuple.__getitem__(call, tuple.__len__(call) - 2)
    out = []
    parent = object.__getattribute__(mock, "__dict__").get("_mock_new_parent")
    for _ in range(_PARENTS_MOST):
        if parent is None or not isinstance(parent, _mock.NonCallableMock):
            break
        own = object.__getattribute__(parent, "__dict__")
        for listed in ("_mock_mock_calls", "method_calls"):
            calls = own.get(listed)
            if isinstance(calls, list) and calls:
                last = list.__getitem__(calls, -1)
                if (isinstance(last, _mock._Call) and tuple.__len__(last) == 3
                        and tuple.__getitem__(last, 1) is args):
                    out.append((parent, last))
        parent = own.get("_mock_new_parent")
    return out


def _flat(view: tuple[tuple[Any, ...], dict[str, Any]]) -> bool:
    """Whether each judged argument is an exact dict or list of atoms."""
    args, kwargs = view
    for a in (*args, *kwargs.values()):
        if a is None:
            continue
        if type(a) is dict:
            if not (_ATOMS.issuperset(map(type, a.values())) and _ATOMS.issuperset(map(type, a))):
                return False
        elif type(a) is not list or not _ATOMS.issuperset(map(type, a)):
            return False
    return True


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


def _copied(view: tuple[tuple[Any, ...], dict[str, Any]]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A copy of the judged arguments (plain data: no code of the program's runs), None for the rest."""
    args, kwargs = view
    return tuple(_copy(a) for a in args), {k: _copy(v) for k, v in kwargs.items()}


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind in _ATOMS or value is None:
        return value
    if kind in (dict, collections.OrderedDict, collections.defaultdict, collections.Counter):
        out = dict.__new__(kind)
        dict.update(out, ((k, _copy(v)) for k, v in dict.items(value)))
        if kind is collections.defaultdict:
            out.default_factory = value.default_factory  # type: ignore[attr-defined]
        return out
    if kind in (list, set, collections.deque, tuple, frozenset):
        return kind(_copy(v) for v in value)
    return value


def _present(entry: tuple[Any, Record, Any], call: Any) -> bool:
    """Whether *call* is still one of its mock's recorded calls (an id is another object's once it died)."""
    mock = entry[0]()
    if mock is None:
        return False
    try:
        own = object.__getattribute__(mock, "__dict__")
    except Exception:
        return False
    for calls in (*_lists(mock), own.get("method_calls"), own.get("_mock_await_args_list")):
        if isinstance(calls, list) and any(c is call for c in list.__iter__(calls)):
            return True
    return False


def _then(call: Any, then: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
    """*call* as it was made: its judged arguments as passed, the others as they are."""
    parts = tuple.__iter__(call)
    name: tuple[Any, ...] = ()
    if tuple.__len__(call) == 3:
        first, args, kwargs = parts
        name = (first,)
    else:
        args, kwargs = parts
    then_args, then_kwargs = then
    args = tuple(t if t is not None else a for a, t in zip(args, then_args, strict=False))
    kwargs = {k: then_kwargs[k] if then_kwargs.get(k) is not None else v for k, v in kwargs.items()}
    return _mock._Call((*name, args, kwargs), two=not name)


def _comparable(other: Any) -> bool:
    """What a recorded call is compared with holds only plain data and ``mock.ANY``: comparing it again
    with the call as made runs no code of the program's."""
    try:
        if not isinstance(other, tuple):
            return False
        for part in tuple.__iter__(other):
            if type(part) is str:
                continue
            values = dict.values(part) if type(part) is dict else part if type(part) is tuple else None
            if values is None:
                return False
            if not all(v is _mock.ANY or _data(v) for v in values):
                return False
        return True
    except Exception:
        return False


def _compared(original: Any) -> Any:
    """``_Call.__eq__``: a recorded call compared (``==``, ``assert_called_with``, ``assert_has_calls``) is
    judged by whether the arguments as passed would have answered the other way."""

    @functools.wraps(original)
    def eq(self: Any, other: Any) -> Any:
        result = original(self, other)
        if _calls:
            try:
                mine = _found(self)
                theirs = _found(other) if mine is None else None
                if mine is not None or theirs is not None:
                    _judge_compared(original, self, other, result, mine, theirs)
            except Exception:  # aliascheck's own failure never reaches the program
                pass
        return result

    return eq


def _found(call: Any) -> tuple[Any, Any, Any] | None:
    """(the record's entry, the recorded call, the call as made) of a recorded call or one derived from it."""
    entry = _calls.get(id(call))
    if entry is not None:
        return entry, call, None
    derived = _derived.get(id(call))
    if derived is not None and derived[0] is call:
        return derived[1], derived[2], derived[3]
    return None


def _judge_compared(original: Any, left: Any, right: Any, result: Any, mine: Any, theirs: Any) -> None:
    (entry, recorded, then), other = (mine, right) if mine is not None else (theirs, left)
    rec = entry[1]
    if rec.flagged or result is NotImplemented or not rec.ledger.recording or not _comparable(other):
        return
    if not _present(entry, recorded):
        return
    if then is None:
        then = _then(recorded, entry[2])
    before = original(then, other) if mine is not None else original(other, then)
    if before is NotImplemented or bool(before) == bool(result):
        return  # the change does not decide this comparison
    _report(rec, recorded)


def _any_of(original: Any) -> Any:
    """``_AnyComparer.__contains__`` (``assert_any_call``): the recorded calls' parts compared one by one;
    judged by whether the calls as made would have answered the other way."""

    @functools.wraps(original)
    def __contains__(self: Any, item: Any) -> Any:
        result = original(self, item)
        if _calls:
            try:
                _judge_any(original, self, item, result)
            except Exception:  # aliascheck's own failure never reaches the program
                pass
        return result

    return __contains__


def _judge_any(original: Any, actual: Any, item: Any, result: Any) -> None:
    found = [(c, _found(c)) for c in list.__iter__(actual)]
    if not any(f is not None for _, f in found) or not _comparable(item):
        return
    then_calls = []
    for call, f in found:
        if f is None:
            then_calls.append(call)
            continue
        entry, recorded, then = f
        if entry[1].flagged or not entry[1].ledger.recording or not _present(entry, recorded):
            return
        then_calls.append(then if then is not None else _then(recorded, entry[2]))
    before = original(type(actual)(then_calls), item)
    if bool(before) != bool(result):
        for _call, f in found:
            if f is not None:
                _report(f[0][1], f[1])


def _matching(original: Any) -> Any:
    """``_call_matcher``: a recorded call bound to the spec's signature is the same call, judged alike."""

    @functools.wraps(original)
    def _call_matcher(self: Any, _call: Any) -> Any:
        out = original(self, _call)
        if _calls and out is not _call:
            try:
                entry = _calls.get(id(_call))
                if entry is not None and len(_derived) < _DERIVED_MOST and isinstance(out, tuple):
                    _derived[id(out)] = (out, entry, _call, original(self, _then(_call, entry[2])))
            except Exception:  # aliascheck's own failure never reaches the program
                pass
        return out

    return _call_matcher


def _report(rec: Record, call: Any) -> None:
    view = _view(call)
    if view is None:
        return
    _checked(rec.ledger)
    if rec.flat is not None:
        if not _same(rec.flat, view):
            judge.message_changed(rec, MOCK_READ, now=(view, judge.FLAT))
    else:
        judge.message_changed(rec, MOCK_READ, now=judge.message_value(view))


def _reading(original: property) -> property:
    """``_Call.args``/``_Call.kwargs``: the test takes a recorded call's arguments themselves; a judged
    one that changed since the call is read as it is now."""
    getter = original.fget
    assert getter is not None

    def get(self: Any) -> Any:
        value = getter(self)
        if _calls:
            entry = _calls.get(id(self))
            if entry is not None and not entry[1].flagged and entry[1].ledger.recording:
                try:
                    if _present(entry, self):
                        _report(entry[1], self)
                except Exception:  # aliascheck's own failure never reaches the program
                    pass
        return value

    return _Read(get, original.fset, original.fdel, original.__doc__)


class _Read(property):
    """A recorded call's ``args``/``kwargs``, judged when the test reads them."""


def _resetting(original: Any) -> Any:
    """``reset_mock``: the mock's recorded calls go, and their records with them (their ids are free)."""

    @functools.wraps(original)
    def reset_mock(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        finally:
            for key in _of_mock.pop(id(self), ()):
                _calls.pop(key, None)

    return reset_mock


@hookimpl
def aliascheck_teardown(ledger: Any) -> None:
    """The test ends: its calls' records go (a later test's mock at a reused id is its own)."""
    _calls.clear()
    _of_mock.clear()
    _derived.clear()
    _count[0] = 0


_ANY_COMPARER: Any = getattr(_mock, "_AnyComparer", None)  # assert_any_call's comparer


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    return undo_all([
        patch(_mock.CallableMixin, "_mock_call", _mock_call),
        patch(_mock.AsyncMockMixin, "_execute_mock_call", _awaiting),
        patch(_mock.NonCallableMock, "reset_mock", _resetting),
        patch(_mock.NonCallableMock, "_call_matcher", _matching),
        *([patch(_ANY_COMPARER, "__contains__", _any_of)] if _ANY_COMPARER is not None else []),
        patch(_mock._Call, "__eq__", _compared),
        patch(_mock._Call, "args", _reading),
        patch(_mock._Call, "kwargs", _reading),
    ])
