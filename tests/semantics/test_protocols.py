"""The methods of state-protocol classes (which aliascheck wraps): calls, frames, signatures, depth."""

from __future__ import annotations

import copy
import inspect
import pickle

import probelib as p
import pytest


def setup_function() -> None:
    p.clear()


def test_reset_without_argument() -> None:
    env = p.Env()
    env.pos = 3
    env.reset()
    assert env.pos == 0


def test_get_state_and_step() -> None:
    env = p.Env()
    assert p.call_step(env) == 1
    assert p.call_get_state(env) == {"pos": 1}


def test_load_state_dict_by_keyword() -> None:
    m = p.Module()
    sd = {"weight": [2.0, 3.0]}
    m.load_state_dict(state_dict=sd)
    m.load_state_dict(sd, strict=False)
    m.load_state_dict(strict=True, state_dict=sd)
    assert m.loaded == [(sd, True), (sd, False), (sd, True)]
    assert m.weight == [2.0, 3.0]


def test_load_state_dict_missing_argument_message() -> None:
    with pytest.raises(TypeError) as info:
        p.Module().load_state_dict()  # type: ignore[call-arg]
    assert str(info.value) == "Module.load_state_dict() missing 1 required positional argument: 'state_dict'"


def test_reset_extra_argument_message() -> None:
    with pytest.raises(TypeError) as info:
        p.Env().reset(1)  # type: ignore[call-arg]
    assert str(info.value) == "Env.reset() takes 1 positional argument but 2 were given"


def test_caller_frame_in_protocol_method() -> None:
    env = p.Env()
    p.call_get_state(env)
    p.call_reset(env)
    p.call_step(env)
    assert env.callers == ["call_get_state", "call_reset", "call_step"]


def test_caller_frame_in_class_defined_in_function() -> None:
    assert p.make_protocol_class() == ("make_protocol_class", "make_protocol_class")


def test_class_body_caller_frame() -> None:
    assert p.make_class() == ("make_class", "make_class")


def test_traceback_length_from_protocol_method() -> None:
    m = p.Module()
    with pytest.raises(ValueError) as info:
        m.raising()
    frames = [f.name for f in info.traceback]
    assert frames == ["test_traceback_length_from_protocol_method", "raising"]
    with pytest.raises(RuntimeError) as info:
        p.Deep().load_state_dict({})
    tb = info.value.__traceback__
    names = []
    while tb is not None:
        names.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert names == ["test_traceback_length_from_protocol_method", "load_state_dict"]


def _reach(fn) -> None:
    try:
        fn()
    except RecursionError:
        pass


def test_recursion_depth_of_protocol_method() -> None:
    _reach(p.plain_recursive)
    plain = p.PLAIN_REACHED
    _reach(p.Deep().state_dict)
    assert p.Deep.reached == plain


def test_recursion_depth_of_other_method() -> None:
    _reach(p.plain_recursive)
    plain = p.PLAIN_REACHED
    env = p.Env()
    _reach(env.walk)
    assert env.walked == plain


@pytest.mark.parametrize("cls, name", [(p.Env, "reset"), (p.Env, "get_state"), (p.Env, "step"),
                                       (p.Module, "state_dict"), (p.Module, "load_state_dict"),
                                       (p.Extra, "set_extra_state"), (p.Picklable, "__getstate__")])
def test_method_identity(cls: type, name: str) -> None:
    fn = cls.__dict__[name]
    assert fn.__name__ == name and fn.__qualname__ == f"{cls.__name__}.{name}"
    assert fn.__code__.co_name == name
    assert fn.__code__.co_filename == p.__file__
    assert fn.__module__ == "probelib"
    assert not hasattr(fn, "__wrapped__")
    assert vars(fn) == {}
    assert fn is getattr(cls, name)
    assert inspect.unwrap(fn) is fn
    assert inspect.getsourcelines(fn)[0][0].strip().startswith(f"def {name}(")


def test_signatures() -> None:
    assert str(inspect.signature(p.Env.reset)) == "(self) -> 'None'"
    assert str(inspect.signature(p.Module.load_state_dict)) == (
        "(self, state_dict: 'dict[str, object]', strict: 'bool' = True) -> 'None'")
    assert p.Module.load_state_dict.__code__.co_varnames[:3] == ("self", "state_dict", "strict")
    assert p.Module.load_state_dict.__defaults__ == (True,)
    assert p.Env.reset.__code__.co_argcount == 1


def test_extra_state() -> None:
    e = p.Extra()
    s = e.get_extra_state()
    e.set_extra_state(s)
    assert e.calls == ["get", "set {'calls': 1}"]


def test_getstate_setstate_counts() -> None:
    p.Picklable.gets = p.Picklable.sets = 0
    obj = p.Picklable()
    p.Traced.seen.clear()
    twin = copy.copy(obj)
    again = pickle.loads(pickle.dumps(obj))
    deep = copy.deepcopy(obj)
    assert (p.Picklable.gets, p.Picklable.sets) == (3, 3)
    assert twin.data is obj.data and again.data == obj.data and deep.data is not obj.data
    assert [s[0] for s in p.Traced.seen] == TRACED_BY_COPY
    assert {s[1:] for s in p.Traced.seen} == {(False, "Traced")}


# What pickling and deep-copying a Picklable reads of the Traced object in its state, in order.
TRACED_BY_COPY = ["__reduce_ex__", "__reduce__", "__getstate__", "__class__", "__setstate__", "__dict__",
                  "__deepcopy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__dict__"]


def test_state_handover_reads_no_attributes() -> None:
    env = p.Env()
    p.Traced.seen.clear()
    state = env.get_state()
    env.reset()
    assert state == {"pos": 0}
    assert p.Traced.seen == []


def test_bound_method_identity() -> None:
    env = p.Env()
    assert env.reset.__func__ is p.Env.__dict__["reset"]
    assert type(env).__dict__["get_state"].__code__.co_firstlineno == _line("def get_state(self)")


def _line(text: str) -> int:
    with open(p.__file__) as f:
        for number, line in enumerate(f, 1):
            if text in line:
                return number
    raise AssertionError(text)
