"""aliascheck.fixes.cloudpickle against cloudpickle's real reconciliation (skeletons, tracker, setstate).

Classes defined in a test function are dynamic (``<locals>`` in their qualname),
so cloudpickle pickles them by value and tracks them, as it does ``__main__``'s.
"""

from __future__ import annotations

import abc
import enum
import gc
import io
import itertools
import threading
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

cloudpickle = pytest.importorskip("cloudpickle", reason="the fix needs: pip install 'aliascheck[cloudpickle]'")

from cloudpickle import cloudpickle as cp  # noqa: E402

from aliascheck.fixes import cloudpickle as fix  # noqa: E402
from aliascheck.instrument import patch  # noqa: E402

ORIGINALS = {name: getattr(cp, name) for name in ("_make_skeleton_class", "_make_skeleton_enum", "_class_setstate")}


@pytest.fixture(autouse=True)
def _untouched() -> Any:
    yield
    assert {name: getattr(cp, name) for name in ORIGINALS} == ORIGINALS, "cloudpickle left patched"


def _gone(make: Any) -> Any:
    """Pickle a class made by *make*, then let it be collected: a load must build it anew."""
    saved, ref = make()
    gc.collect()
    assert ref() is None
    return saved


def test_keep_leaves_an_existing_class_as_it_is_and_update_resets_it() -> None:
    class Klass:
        classvar = None

        def method(self) -> str:
            return "original"

    saved = cloudpickle.dumps(Klass)
    Klass.classvar = 100  # type: ignore[assignment]
    method = Klass.method
    assert fix.loads(saved) is Klass
    assert Klass.classvar == 100 and Klass.method is method
    assert isinstance(fix.loads(cloudpickle.dumps(Klass())), Klass)
    assert fix.loads(saved, existing_classes="update") is Klass
    assert Klass.classvar is None and Klass.method is not method  # cloudpickle's own behaviour


def test_a_class_new_to_this_process_is_built_populated_and_then_kept() -> None:
    def make() -> Any:
        class Local:
            classvar = 1

            def method(self) -> int:
                return self.classvar

        return cloudpickle.dumps(Local()), weakref.ref(Local)

    saved = _gone(make)
    obj = fix.loads(saved)
    cls = type(obj)
    assert (cls.__name__, cls.classvar, obj.method()) == ("Local", 1, 1)
    cls.classvar = 2
    assert type(fix.loads(saved)) is cls and cls.classvar == 2


def test_enum_members_keep_their_identity_and_an_existing_enum_its_attributes() -> None:
    class Color(enum.Enum):
        RED = 1
        GREEN = 2

        def shout(self) -> str:
            return self.name.upper()

    Color.extra = None  # type: ignore[attr-defined]
    saved = cloudpickle.dumps([Color.RED, Color])
    Color.extra = 100  # type: ignore[attr-defined]
    red, cls = fix.loads(saved)
    assert red is Color.RED and cls is Color and Color(2) is Color.GREEN and Color.extra == 100  # type: ignore
    fix.loads(saved, existing_classes="update")
    assert Color.extra is None  # type: ignore[attr-defined]

    def make() -> Any:
        class Fresh(enum.Enum):
            A = "a"
            B = "b"

        return cloudpickle.dumps(Fresh.B), weakref.ref(Fresh)

    b = fix.loads(_gone(make))
    assert [m.value for m in type(b)] == ["a", "b"] and type(b)("b") is b and fix.loads(cloudpickle.dumps(b)) is b


def test_slots_classes_keep_their_class_attributes_and_instances_their_slots() -> None:
    class Slotted:
        __slots__ = ("x",)
        classvar = None

        def __init__(self, x: int) -> None:
            self.x = x

    saved = cloudpickle.dumps(Slotted(7))
    Slotted.classvar = 100  # type: ignore[assignment]
    obj = fix.loads(saved)
    assert type(obj) is Slotted and obj.x == 7 and Slotted.classvar == 100 and not hasattr(obj, "__dict__")

    def make() -> Any:
        class Fresh:
            __slots__ = ("y",)

        inst = Fresh()
        inst.y = 3
        return cloudpickle.dumps(inst), weakref.ref(Fresh)

    fresh = fix.loads(_gone(make))
    assert fresh.y == 3 and type(fresh).__slots__ == ("y",)


def test_abcs_keep_their_registered_subclasses() -> None:
    class Base(abc.ABC):
        classvar = None

        @abc.abstractmethod
        def run(self) -> None: ...

    class Early:
        pass

    class Late:
        pass

    Base.register(Early)
    saved = cloudpickle.dumps(Base)
    Base.register(Late)
    Base.classvar = 100  # type: ignore[assignment]
    assert fix.loads(saved) is Base
    assert issubclass(Early, Base) and issubclass(Late, Base) and Base.classvar == 100
    assert isinstance(Late(), Base)

    def make() -> Any:
        class Iface(abc.ABC):
            @abc.abstractmethod
            def run(self) -> None: ...

        class Impl:
            def run(self) -> None:
                pass

        Iface.register(Impl)
        return cloudpickle.dumps((Iface, Impl)), weakref.ref(Iface)

    iface, impl = fix.loads(_gone(make))
    assert issubclass(impl, iface) and isinstance(impl(), iface)


def test_classes_reached_through_instances_globals_and_closures_are_kept() -> None:
    class Klass:
        classvar = None

    def closure() -> type:
        return Klass

    shapes = [Klass(), closure, {"nested": [Klass]}]
    saved = [cloudpickle.dumps(shape) for shape in shapes]
    Klass.classvar = 100  # type: ignore[assignment]
    for data in saved:
        fix.loads(data)
    assert Klass.classvar == 100
    assert fix.loads(saved[1])() is Klass


def test_keep_existing_classes_covers_plain_loads_in_every_thread_and_is_undone() -> None:
    class Klass:
        classvar = None

    saved = cloudpickle.dumps(Klass)
    Klass.classvar = 100  # type: ignore[assignment]
    with fix.keep_existing_classes():
        with fix.keep_existing_classes():  # nests
            pass
        worker = threading.Thread(target=cloudpickle.loads, args=(saved,))
        worker.start()
        worker.join()
        made_inside = cloudpickle.dumps(Klass)  # the layers pickle by reference, as cloudpickle's own
    assert Klass.classvar == 100
    assert cloudpickle.loads(made_inside) is Klass and Klass.classvar == 100
    cloudpickle.loads(saved)
    assert Klass.classvar is None


def test_layers_compose_with_a_wrapper_installed_on_top() -> None:
    """The detector may wrap _class_setstate after the fix; undo in any order leaves cloudpickle whole."""

    class Klass:
        classvar = None

    saved = cloudpickle.dumps(Klass)
    calls = []

    def spy(original: Any) -> Any:
        def wrapper(obj: Any, state: Any) -> Any:
            calls.append(obj)
            return original(obj, state)

        return wrapper

    undo_fix = fix.install()
    undo_spy = patch(cp, "_class_setstate", spy)  # type: ignore[arg-type]
    Klass.classvar = 100  # type: ignore[assignment]
    cloudpickle.loads(saved)
    assert Klass.classvar == 100 and calls == [Klass]  # the spy saw the load; the fix kept the class
    undo_fix()  # not on top: stays in the chain, inactive
    cloudpickle.loads(saved)
    assert Klass.classvar is None
    with fix.keep_existing_classes():  # reused where it is, not stacked twice
        Klass.classvar = 100  # type: ignore[assignment]
        cloudpickle.loads(saved)
        assert Klass.classvar == 100
    undo_spy()
    assert cp._class_setstate is not ORIGINALS["_class_setstate"]  # the inactive layer is what the spy wrapped
    fix.install()()  # on top again: taken out
    # (the autouse fixture checks every attribute is cloudpickle's own again)


_gate_calls = itertools.count()
_gate_entered, _gate_release = threading.Event(), threading.Event()


def _gate() -> str:
    if next(_gate_calls) == 0:
        _gate_entered.set()
        assert _gate_release.wait(60)
    return "gated"


class _Gate:
    def __reduce__(self) -> Any:
        return (_gate, ())


def test_a_skeleton_another_thread_is_still_filling_is_populated_not_kept() -> None:
    """Thread A built the class and is unpickling its state; B's load finds A's empty skeleton."""

    def make() -> Any:
        class Local:
            gate = _Gate()
            classvar = 1

        return cloudpickle.dumps(Local), weakref.ref(Local)

    saved = _gone(make)
    got: list[Any] = []
    first = threading.Thread(target=lambda: got.append(fix.loads(saved)))
    first.start()
    try:
        assert _gate_entered.wait(60)
        second = fix.loads(saved)
        assert (second.classvar, second.gate) == (1, "gated")
    finally:
        _gate_release.set()
        first.join()
    assert got == [second]


def test_load_from_a_file_and_bad_modes() -> None:
    class Klass:
        classvar = None

    buf = io.BytesIO(cloudpickle.dumps(Klass))
    Klass.classvar = 100  # type: ignore[assignment]
    assert fix.load(buf) is Klass and Klass.classvar == 100
    buf.seek(0)
    fix.load(buf, existing_classes="update")
    assert Klass.classvar is None
    with pytest.raises(ValueError, match="existing_classes must be one of"):
        fix.loads(b"", existing_classes="merge")


_names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_values = st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=3), st.none())


@settings(max_examples=40, deadline=None)
@given(pickled=st.dictionaries(_names, _values, max_size=5), live=st.dictionaries(_names, _values, max_size=5))
def test_keep_never_writes_an_existing_class_and_update_writes_the_pickle(pickled: dict, live: dict) -> None:
    cls = type("Generated", (), dict(pickled))  # not an attribute of this module: dynamic
    saved = cloudpickle.dumps(cls)
    for name, value in live.items():
        setattr(cls, name, value)
    before = dict(cls.__dict__)
    assert fix.loads(saved) is cls
    assert dict(cls.__dict__) == before and all(cls.__dict__[k] is v for k, v in before.items())
    fix.loads(saved, existing_classes="update")
    assert {k: getattr(cls, k) for k in pickled} == pickled
