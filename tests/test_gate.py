"""The marked code's gate (aliascheck.gate): the compiled twin answers as the reference does.

Both implementations are asked the same questions from the same call shape (a local name passed
on), each configured with its own fresh sets, so that a verdict and the bookkeeping it leaves
(SEEN, FED) can be compared.
"""

from __future__ import annotations

import copy
import importlib
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aliascheck import gate
from aliascheck.boundary import runtime as boundary

ATOM_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3),
                        st.binary(max_size=3))
VALUES = st.recursive(ATOM_VALUES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(st.text(max_size=2), inner, max_size=3),
    st.builds(bytearray, st.binary(max_size=3)), st.sets(ATOM_VALUES, max_size=3)), max_leaves=8)


class _State:
    """One implementation's own sets, as the runtime's are."""

    def __init__(self, impl: Any, width: int = 3) -> None:
        self.impl = impl
        self.buffers: set[type] = {bytearray}
        self.watched: set[int] = set()
        self.fed: set[int] = set()
        self.seen: dict[int, Any] = {}
        self.held: set[type] = {dict, list, tuple, set}
        self.generators: list[tuple[Any, ...]] = []
        impl.configure(boundary.ATOMS, self.buffers, self.watched, self.fed, self.held, self.seen,
                       boundary._Last, width, self._looked)

    def _looked(self, iterable: Any, site: int, *passed: bool) -> Any:
        self.generators.append((iterable, site, *passed))
        return iterable


@pytest.fixture
def both() -> Iterator[tuple[_State, _State]]:
    if not gate.COMPILED:
        pytest.skip("the compiled gate was not built")
    states = (_State(gate), _State(gate._compiled))
    try:
        yield states
    finally:  # the runtime's own sets again
        for impl in {gate, boundary._gates}:
            impl.configure(boundary.ATOMS, boundary.BUFFERS, boundary.WATCHED, boundary.FED, boundary.HELD,
                           boundary.SEEN, boundary._Last, boundary.QUIET_WIDTH, boundary.generator_loop)
            impl.configure_calls(boundary.UNBOUND, boundary.UNPASSED, boundary.QUIET, boundary.PENDING, boundary.OWN,
                                 boundary.CLEAN, boundary.CALLERS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=VALUES, held=st.booleans(), keeper=st.sampled_from(["list", "bytearray"]), watched=st.booleans(),
       watch=st.booleans())
def test_both_gates_answer_alike(both: tuple[_State, _State], value: Any, held: bool, keeper: str, watched: bool,
                                 watch: bool) -> None:
    """Atoms, tuples of atoms, short dicts and lists of atoms held by the keeper alone (or also by
    someone else), kept into a list or a buffer that is or is not watched: the same verdict."""
    answers = []
    for state in both:
        owner: Any = [] if keeper == "list" else bytearray()
        state.impl.unwatch()
        if watched:
            state.impl.watch((id(owner),))
        mine = copy.deepcopy(value)  # referred to by this frame alone, unless held
        if keeper == "list":
            owner.append(mine)
        other = [mine] if held else None  # a holder besides the keeper
        # Called as the marked code calls it: the value's name on the stack, nothing else between.
        answers.append(bool(state.impl.keep(mine, owner, watch)))
        del other, mine
    assert answers[0] == answers[1]


class _Node:
    """Stands in for a project's own type (a tree's node)."""


class _Meta(type):
    def __hash__(cls) -> int:  # the program's code: a gate never hashes such a type
        raise AssertionError("hashed")


class _Odd(metaclass=_Meta):
    pass


def test_an_object_of_a_project_type_learnt_is_asked_only_about_its_keeper(both: tuple[_State, _State]) -> None:
    """Once the runtime learnt a type as the project's own (``OWN``), keeping one of its objects asks only
    whether the keeper is watched; before that, and for a type whose metatype hashes otherwise, the
    runtime is called as before."""
    for state in both:
        own: set[type] = set()
        state.impl.configure_calls(set(), set(), {}, {}, own)
        state.impl.unwatch()
        keeper: list[Any] = []
        node, odd = _Node(), _Odd()
        assert state.impl.keep(node, keeper) and state.impl.keep(odd, keeper)
        own.add(_Node)
        assert not state.impl.keep(node, keeper) and state.impl.keep(odd, keeper)
        # A short list of atoms and such objects that only the keeper holds is the project's structure too.
        assert not state.impl.keep([_Node(), 1, "a"], keeper) and state.impl.keep([_Odd(), 1], keeper)
        named: list[Any] = []
        assert not state.impl.keep((1, _Node(), "a"), keeper) and state.impl.keep((1, named), keeper)
        state.impl.watch((id(keeper),))
        assert state.impl.keep(node, keeper) and not state.impl.keep(node, keeper, False)
        state.impl.unwatch()


def test_watching_is_answered_alike_through_the_filter(both: tuple[_State, _State]) -> None:
    """The compiled gate asks a bitmap of addresses before the set: an object nobody watches is told
    so without an int being built, a watched one is found, and one whose address shares a watched
    one's bit is still told apart by the set itself."""
    objects = [[] for _ in range(5000)]
    for state in both:
        state.impl.unwatch()
        state.impl.watch(id(o) for o in objects[::2])
        assert state.watched == {id(o) for o in objects[::2]}
        # An id on the same bit as an unwatched object (the compiled filter's 1 << 20 bits, 16-byte
        # granules): the filter says maybe, the set says no.
        # (Not one of the objects' own ids: they may lie more than 16 MiB apart in a large heap.)
        state.impl.watch({id(o) + (1 << 24) for o in objects[1::2]} - {id(o) for o in objects})
        assert [state.impl.watching(o) for o in objects] == [i % 2 == 0 for i in range(len(objects))]
        state.impl.unwatch()
        assert not state.watched and not any(state.impl.watching(o) for o in objects)


def test_a_set_configured_with_ids_in_it_is_watched_from_the_start() -> None:
    if not gate.COMPILED:
        pytest.skip("the compiled gate was not built")
    owner: list[Any] = []
    try:
        watched = {id(owner)}
        gate._compiled.configure(boundary.ATOMS, set(), watched, set(), set(), {}, boundary._Last, 3,
                                 lambda it, site: it)
        assert gate._compiled.watching(owner) and not gate._compiled.watching([])
    finally:
        for impl in {gate, boundary._gates}:
            impl.configure(boundary.ATOMS, boundary.BUFFERS, boundary.WATCHED, boundary.FED, boundary.HELD,
                           boundary.SEEN, boundary._Last, boundary.QUIET_WIDTH, boundary.generator_loop)


def test_the_verdicts_the_marked_code_relies_on(both: tuple[_State, _State]) -> None:
    # Asked in plain statements: an assert's rewriting would hold the values in its own temporaries.
    for state in both:
        keep = state.impl.keep
        keeper: list[Any] = []
        shared_list: list[Any] = []
        atom, pair, holding = keep(3, keeper), keep((1, "a"), keeper), keep((shared_list,), keeper)
        # A new empty container only the value holds (``{"i": i, "tags": []}``): nobody else can change it.
        fresh_parts = keep(([],), keeper) or keep({"i": 1, "tags": []}, keeper) or keep([1, {}], keeper)
        fresh = [1, 2]
        keeper.append(fresh)
        alone = keep(fresh, keeper)  # a short list of atoms only the keeper and a name hold
        also = fresh
        shared = keep(fresh, keeper)  # someone else holds it too
        del also
        longer = [1, 2, 3, 4]
        keeper.append(longer)
        wide = keep(longer, keeper)  # longer than the width: kept looks
        into_buffer = keep(fresh, bytearray())  # kept into a buffer: kept looks
        state.impl.watch((id(keeper),))
        watched, unwatched = keep(3, keeper), keep(3, keeper, False)
        assert (atom, pair, holding, fresh_parts, alone, shared, wide, into_buffer, watched, unwatched) == (
            False, False, True, False, False, True, True, True, True, False)


def test_the_fed_loop_path_leaves_the_same_bookkeeping(both: tuple[_State, _State]) -> None:
    """An item of a fed loop becomes the site's last (no call); the same item again goes on to the
    gate; an unfed loop's item goes to the gate at once; a watched keeper always does."""
    for state in both:
        keeper: list[Any] = []
        first, second = {"a": [1]}, {"b": [2]}
        assert state.impl.keep(first, keeper, True, 7, 8)  # site 7 not fed: the gate (a dict holding a list)
        assert 8 not in state.seen
        state.fed.add(7)
        assert not state.impl.keep(first, keeper, True, 7, 8)
        assert state.seen[8] == (id(first), 1, False) and type(state.seen[8]) is boundary._Last  # by id
        assert state.impl.keep(first, keeper, True, 7, 8)  # the same object again: a history of one object
        entry = state.seen[8]
        assert not state.impl.keep(second, keeper, True, 7, 8)
        assert state.seen[8] == (id(second), 1, False)
        del entry
        state.impl.watch((id(keeper),))
        assert state.impl.keep({"c": [3]}, keeper, True, 7, 8)


def test_a_reused_last_entry_lets_go_of_the_earlier_item(both: tuple[_State, _State]) -> None:
    """SEEN knows a site's last item by id and never holds it: it dies when the program lets go of
    it. Where SEEN alone holds the site's last entry, the compiled gate reuses it in place."""
    import weakref

    class Item(dict[str, Any]):
        pass

    for state in both:
        state.fed.add(1)
        state.held.add(Item)
        keeper: list[Any] = []
        first = Item(a=[1])
        gone = weakref.ref(first)
        assert not state.impl.keep(first, keeper, True, 1, 2)
        entry = id(state.seen[2])
        second = Item(b=[2])  # made first: the freed item's id is not reused here
        del first
        assert gone() is None  # SEEN holds its id only
        assert not state.impl.keep(second, keeper, True, 1, 2)
        assert state.seen[2][0] == id(second)
        if state.impl is gate._compiled:
            assert id(state.seen[2]) == entry  # reused, not made again


def test_loops_over_anything_but_a_generator_are_no_longer_fed(both: tuple[_State, _State]) -> None:
    for state in both:
        state.fed.add(5)
        items = [1, 2]
        assert state.impl.loop(items, 5) is items and 5 not in state.fed
        gen = (i for i in items)
        assert state.impl.loop(gen, 5) is gen and state.generators == [(gen, 5)]


def test_a_loop_over_a_parameter_is_fed_when_the_caller_is_known_for_the_projects(
        both: tuple[_State, _State]) -> None:
    """``for x in param``: a caller the runtime has seen for the project's makes the items fed with no
    Python call; any other caller is the runtime's question (``generator_loop(it, site, True)``)."""
    for state in both:
        callers: set[int] = set()
        state.impl.configure_calls(set(), set(), {}, {}, set(), set(), callers)
        items = [1, 2]

        def marked(param: list[int], impl: Any = state.impl) -> Any:
            return impl.loop(param, 7, True)

        def caller(items: list[int] = items) -> Any:
            return marked(items)

        assert caller() is items and 7 not in state.fed and state.generators == [(items, 7, True)]
        callers.add(id(caller.__code__))
        assert caller() is items and 7 in state.fed and len(state.generators) == 1
        gen = (i for i in items)  # a generator is looked at as ever, told that it was passed
        assert marked(gen) is gen and state.generators[-1] == (gen, 7, True)


def test_no_type_hash_of_the_programs_runs(both: tuple[_State, _State]) -> None:
    """A metaclass with its own ``__hash__`` (an enum-like registry): never hashed by the gate."""
    hashed: list[type] = []

    class Meta(type):
        def __hash__(cls) -> int:
            hashed.append(cls)
            return id(cls)

    class Keeper(list[Any], metaclass=Meta):
        pass

    class Value(dict[str, Any], metaclass=Meta):
        pass

    for state in both:
        state.fed.add(1)
        assert state.impl.keep([1], Keeper())  # not hashed: the runtime decides
        assert state.impl.keep(Value(a=[1]), Keeper(), True, 1, 2)
    assert hashed == []


def test_the_reference_gate_finds_the_same_bugs(pytester: pytest.Pytester) -> None:
    """``ALIASCHECK_GATE=python``: the pure-Python gate, end to end, reports what the compiled one does."""
    pytester.makepyfile(test_keep=textwrap.dedent('''
        import numpy as np

        def frames(buffer, n):
            for i in range(n):
                buffer[:] = i
                yield buffer

        def test_reused_buffer_kept():
            kept = []
            for frame in frames(np.zeros(4), 3):
                kept.append(frame)
            assert len(kept) == 3

        def test_copies_kept():
            kept = []
            for frame in frames(np.zeros(4), 3):
                kept.append(frame.copy())
            assert len(kept) == 3
    '''))
    outcomes = []
    for which in ("python", "compiled"):
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                              "--aliascheck", "-rA", str(Path(pytester.path) / "test_keep.py")],
                             capture_output=True, text=True, cwd=pytester.path, timeout=300,
                             env={**os.environ, "ALIASCHECK_GATE": which})
        outcomes.append(sorted(line.split(" - ")[0] for line in run.stdout.splitlines()
                               if line.startswith(("PASSED", "FAILED"))))
    assert outcomes[0] == outcomes[1]
    assert "FAILED test_keep.py::test_reused_buffer_kept" in outcomes[0]
    assert "PASSED test_keep.py::test_copies_kept" in outcomes[0]


def test_the_documented_install_builds_the_compiled_gate() -> None:
    """README's install compiles the gate (a compiler is there): the marked code runs at C speed."""
    assert gate.COMPILED or os.environ.get("ALIASCHECK_GATE") == "python"
    assert boundary.GATE is (gate._compiled.keep if gate.COMPILED else gate.keep)


def test_a_receiver_is_read_from_a_bound_method_only(both: tuple[_State, _State]) -> None:
    """``x.y.resize(n)``: the object written is the bound method's own; any other callable's
    ``__self__`` would be the program's attribute, never read."""

    class Callable:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"read {name}")

        def __call__(self) -> None:
            pass

        def method(self) -> None:
            pass

    obj, data = Callable(), bytearray(b"ab")
    for state in both:
        assert state.impl.receiver(obj.method) is obj
        assert state.impl.receiver(data.extend) is data
        assert state.impl.receiver(obj) is None and state.impl.receiver(len) is not obj


class _Meta(type):
    def __hash__(cls) -> int:  # never run by the gate
        raise AssertionError("the gate hashed a type through its metatype")


class _Odd(metaclass=_Meta):
    pass


def test_the_call_gates_answer_alike(both: tuple[_State, _State]) -> None:
    """buffer, bind, passes and pended: the same answers from both, from exact types by address, a
    weak reference read at C level and a dict's keys; no metatype's hash is run."""
    import weakref

    def callee() -> None:
        pass

    def other() -> None:
        pass

    answers = []
    for state in both:
        impl = state.impl
        unbound, unpassed = {tuple, int}, {tuple, int}
        quiet: dict[int, Any] = {7: weakref.ref(callee)}
        pending: dict[int, Any] = {9: []}
        impl.configure_calls(unbound, unpassed, quiet, pending)
        answers.append((
            impl.buffer(bytearray()), impl.buffer([]), impl.buffer(_Odd()),
            impl.bind((1,)), impl.bind([]), impl.bind([], "a str"), impl.bind([], []), impl.bind(_Odd()),
            impl.passes(7, None, 1, (2,)), impl.passes(7, None, 1, []), impl.passes(7, callee, []),
            impl.passes(7, other, []), impl.passes(8, callee, []), impl.passes(7, callee, _Odd()),
            impl.pended(9), impl.pended(8),
            impl.buffer_or_watched(bytearray(), []), impl.buffer_or_watched([], []),
        ))
    assert answers[0] == answers[1] == (
        True, False, False,  # buffer: a bytearray is, a list is not, a type hashed by its metatype is not
        False, True, False, True, True,  # bind: learnt types no, a list yes, a str's method no
        False, True, False,  # passes: learnt types only no; the callee that kept nothing here no
        True, True, False,  # another callee, another site yes; an odd type is never hashed: learnt no
        True, False,  # pended
        True, False,  # buffer_or_watched: an array's memory; neither a buffer nor watched
    )


def test_passes_knows_an_owners_method_that_kept_nothing(both: tuple[_State, _State]) -> None:
    """``Node.make(x)`` (a class's classmethod or function) and ``mod.make(x)`` (a module's): once the
    runtime found the owner's entry kept nothing at a site, the gate skips the call while the owner is
    the same and its entry is still that function, read along the MRO or from the module's dict (no
    descriptor, no ``__getattr__`` run). Rebound, it asks again; another owner asks."""
    import types
    import weakref

    class Node:
        @classmethod
        def make(cls, x: Any) -> None:
            pass

    class Leaf(Node):
        pass

    module = types.ModuleType("made")

    def build(x: Any) -> None:
        pass

    module.build = build  # type: ignore[attr-defined]
    answers = []
    for state in both:
        impl = state.impl
        quiet: dict[int, Any] = {
            7: (weakref.ref(Node), "make", weakref.ref(Node.__dict__["make"].__func__)),
            8: (weakref.ref(Leaf), "make", weakref.ref(Node.__dict__["make"].__func__)),
            9: (weakref.ref(module), "build", weakref.ref(build)),
        }
        impl.configure_calls(set(), set(), quiet, {})
        before = (impl.passes(7, Node, []), impl.passes(8, Leaf, []), impl.passes(9, module, []),
                  impl.passes(7, Leaf, []), impl.passes(8, Node, []))
        original = Node.__dict__["make"]
        Node.make = classmethod(lambda cls, x: None)  # type: ignore[method-assign, assignment]
        module.build = lambda x: None  # type: ignore[attr-defined]
        after = (impl.passes(7, Node, []), impl.passes(8, Leaf, []), impl.passes(9, module, []))
        Node.make = original  # type: ignore[method-assign]
        module.build = build  # type: ignore[attr-defined]
        answers.append((before, after))
    assert answers[0] == answers[1] == ((False, False, False, True, True), (True, True, True))


def test_passes_knows_an_instances_method_that_kept_nothing(both: tuple[_State, _State]) -> None:
    """``state.append_token(t)``: once the runtime found the function an instance's class binds kept
    nothing at a site, the gate skips the call for any instance of that very class while its MRO entry
    is still that function and no attribute of the instance's own hides it, found as the generic lookup
    finds it (no descriptor, ``__getattr__`` or ``__getattribute__`` of the program's runs). A subclass,
    a class with its own ``__getattr__``, a hiding attribute or a rebound method asks again."""
    import weakref

    class State:
        def append_token(self, token: Any) -> None:
            pass

    class Sub(State):
        pass

    class Lookup(State):
        def __getattr__(self, name: str) -> Any:
            raise AttributeError(name)

    function = State.__dict__["append_token"]
    assert gate.instance_method(State(), "append_token") is function
    assert gate.instance_method(Lookup(), "append_token") is None  # its own lookup decides
    answers = []
    for state in both:
        impl = state.impl
        quiet: dict[int, Any] = {7: (weakref.ref(State), "append_token", weakref.ref(function), True),
                                 8: (weakref.ref(Lookup), "append_token", weakref.ref(function), True)}
        impl.configure_calls(set(), set(), quiet, {})
        one, hidden = State(), State()
        hidden.append_token = print  # type: ignore[method-assign]
        before = (impl.passes(7, one, []), impl.passes(7, State(), []), impl.passes(7, Sub(), []),
                  impl.passes(7, hidden, []), impl.passes(8, Lookup(), []))
        State.append_token = lambda self, token: None  # type: ignore[method-assign]
        after = impl.passes(7, one, [])
        State.append_token = function  # type: ignore[method-assign]
        answers.append((before, after))
    assert answers[0] == answers[1] == ((False, False, True, True, True), True)


def test_refilled_is_not_asked_again_of_what_was_handed_out_and_not_written_since(
        both: tuple[_State, _State]) -> None:
    """``return chars`` of a cached set, 700k times in mistune: once the runtime saw it handed out, its
    id is clean until the project writes into it, and the gate answers no without a call."""
    answers = []
    for state in both:
        clean: set[int] = set()
        state.impl.configure_calls(set(), set(), {}, {}, set(), clean)
        row, holder = {"id": 1}, []
        holder.append(row)  # something besides the function's name refers to it
        first = state.impl.refilled(row)
        clean.add(id(row))
        handed = (state.impl.refilled(row), state.impl.refilled(row, True))
        clean.discard(id(row))  # the project wrote into it
        answers.append((first, handed, state.impl.refilled(row)))
    assert answers[0] == answers[1] == (True, (False, False), True)


def _marked_keep(impl: Any, value: Any, keeper: Any) -> Any:
    """A marked function keeping its parameter: ``keeper.append(value)``'s gate question."""
    return impl.keep(value, keeper, True, -2, 9)


def _project_caller(impl: Any, value: Any, keeper: Any) -> Any:
    return _marked_keep(impl, value, keeper)


def test_a_parameter_the_project_passed_becomes_the_sites_last_without_a_call(
        both: tuple[_State, _State]) -> None:
    """``self.tokens.append(token)`` called by the project (its caller's code seen by the runtime): a
    dict or list parameter not the site's last becomes it in the gate, as a fed loop's item does; the
    same object again, another caller, or a watched keeper go on to the runtime."""
    answers = []
    for state in both:
        callers = {id(_project_caller.__code__)}
        state.impl.configure_calls(set(), set(), {}, {}, set(), set(), callers)
        keeper: list[Any] = []
        token = {"type": "text", "raw": "a"}
        held = [token]  # the caller's list holds it too: not a dict only the keeper holds
        fresh = _project_caller(state.impl, token, keeper)
        seen = state.seen.get(9)
        again = _project_caller(state.impl, token, keeper)
        other = _marked_keep(state.impl, {"type": "text", "raw": "b", "x": held}, keeper)  # an unknown caller
        state.impl.watch((id(keeper),))
        watched = _project_caller(state.impl, {"raw": "c", "x": held}, keeper)
        answers.append((fresh, seen == (id(token), 1, False), again, other, watched))
    assert answers[0] == answers[1] == (False, True, True, True, True)


def test_returning_asks_only_about_an_array_something_else_holds(both: tuple[_State, _State]) -> None:
    """``return y`` of a new array (only the function's name refers to it) is never handed to the
    runtime; one an attribute or a collection also holds (``return self.obs``) is. Asked as the
    marked code asks: a local name passed on."""
    answers = []
    for state in both:
        kept = bytearray(4)
        holder = [kept]  # an attribute's or a global's reference, as it were
        fresh = bytearray(4)
        new, held, other = state.impl.returning(fresh), state.impl.returning(kept), state.impl.returning([1])
        answers.append((new, held, other))
        del holder
    assert answers[0] == answers[1] == (False, True, False)


def test_refilled_asks_about_a_container_something_else_holds(both: tuple[_State, _State]) -> None:
    """``return x`` of what the function writes into: an exact dict, list, set or bytearray, or an
    array, that something besides the function's name refers to; a new one is never asked about,
    nor a frozenset, a tuple or a subclass (its own methods may do anything); with *anyhow* (a
    generator's yield of a name its loop keeps) the count is not asked."""
    answers = []
    for state in both:
        kept, fresh, shared_set = {}, {}, set()
        holder = [kept, shared_set]

        class Mine(dict):
            pass

        mine = Mine()
        also = [mine]
        answers.append((state.impl.refilled(fresh), state.impl.refilled(kept), state.impl.refilled(shared_set),
                         state.impl.refilled(fresh, True), state.impl.refilled(mine),
                         state.impl.refilled(frozenset(), True), state.impl.refilled((1,), True)))
        del holder, also
    assert answers[0] == answers[1] == (False, True, True, True, False, False, False)


def test_a_loop_in_a_function_with_no_caller_is_answered(both: tuple[_State, _State]) -> None:
    """A thread's first function (``_thread.start_new_thread``) has no Python caller: the loop's
    question is answered (the runtime's), never an error in the program's thread."""
    import _thread
    import threading as _threading

    for state in both:
        state.impl.configure_calls(set(), set(), {}, {}, set(), set(), {12345})
        done = _threading.Event()
        got: list[Any] = []

        def first(param: list[int], impl: Any = state.impl, got: list[Any] = got,
                  done: _threading.Event = done) -> None:
            try:
                got.append(impl.loop(param, 9, True))
            except BaseException as exc:  # what would reach the program
                got.append(exc)
            finally:
                done.set()

        items = [1]
        _thread.start_new_thread(first, (items,))
        assert done.wait(10)
        assert got == [items] and state.generators[-1] == (items, 9, True)


@pytest.mark.skipif(not gate.COMPILED, reason="the compiled twin is not built")
def test_memory_at_reads_what_the_ctypes_reference_reads() -> None:
    from aliascheck import handlers

    data = bytearray(range(200)) * 3
    address = _address_of(data)
    for size, limit in ((0, 256), (1, 256), (256, 256), (257, 256), (600, 256), (600, 0)):
        compiled = gate._compiled.memory_at(address, size, limit)
        reference = handlers._memory_here(address, size, limit)
        assert type(compiled) is (bytes if size <= limit else memoryview)
        assert bytes(compiled) == bytes(reference) == bytes(data[:size])
    with pytest.raises(ValueError):
        gate._compiled.memory_at(0, 4, 256)
    with pytest.raises(ValueError):
        gate._compiled.memory_at(address, -1, 256)


def _address_of(data: bytearray) -> int:
    import ctypes

    return ctypes.addressof(ctypes.c_char.from_buffer(data))


@pytest.mark.skipif(not gate.COMPILED, reason="the compiled twin is not built")
def test_buffer_span_reads_what_the_ctypes_reference_reads() -> None:
    from aliascheck.boundary import runtime

    data = bytearray(16)
    view = memoryview(data)
    for part in (view, view[3:9]):
        assert gate._compiled.buffer_span(part) == runtime._span_here(part)
    assert gate._compiled.buffer_span(view[3:9])[1] == 6
    assert gate._compiled.buffer_span(view[16:])[1] == 0  # empty: ctypes maps nothing there
    assert gate._compiled.buffer_span(view[::2]) is None  # not one span
    assert runtime._span_here(memoryview(b"abc")) is None  # read-only: the reference cannot map it
    released = memoryview(bytearray(4))
    released.release()
    assert gate._compiled.buffer_span(released) is None


@pytest.mark.skipif(not gate.COMPILED, reason="the compiled twin is not built")
def test_compiled_tensor_read_reduces_as_the_python_handler() -> None:
    """The fingerprint pickler's compiled override reads a plain CPU tensor as ``handlers._tensor`` does,
    and hands every other tensor (and object) to the Python override: the same reduction either way."""
    torch = pytest.importorskip("torch")
    fp_module = importlib.import_module("aliascheck.fingerprint")  # the package's name is the function
    base = torch.arange(12.0).reshape(3, 4)
    tensors = [base, base.t(), base[1], torch.tensor(3), torch.zeros(0), torch.arange(500, dtype=torch.int64),
               torch.ones(2, dtype=torch.bool), torch.nn.Parameter(torch.ones(3)), torch.ones(2, dtype=torch.complex64),
               torch.ones(2, 2).to_sparse(), torch.ones(8)[::2]]
    pickler = fp_module._Pickler()
    assert pickler.reducer_override is not pickler._reduce  # the compiled one, looked up by pickle
    for t in tensors:
        assert pickler.reducer_override(t) == pickler._reduce(t), t
    seen: list[Any] = []
    reductions: list[Any] = []
    pickler.seen, pickler.seen_types, pickler.reductions = seen, (torch.Tensor,), reductions
    first = pickler.reducer_override(base)
    assert seen == [base] and reductions == [first]
    pickler.seen = pickler.reductions = None
    base.add_(1)  # then: the reduction read before is used in place of a new read
    pickler.then = {id(base): first}
    assert pickler.reducer_override(base) is first
    pickler.then = None
    assert pickler.reducer_override(base) != first


def test_fingerprint_is_the_same_with_and_without_the_compiled_tensor_read(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    fp_module = importlib.import_module("aliascheck.fingerprint")  # the package's name is the function
    state = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)).state_dict()
    state["big"], state["odd"] = torch.arange(300.0), torch.ones(3, 3).t()
    compiled = fp_module.fingerprint(state)
    monkeypatch.setattr(fp_module.gate, "COMPILED", False)
    monkeypatch.setattr(fp_module, "_local", threading.local())  # a pickler made now: the Python override
    assert fp_module.fingerprint(state) == compiled
