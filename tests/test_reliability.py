"""Reliability on real suites: no hang, no crash, no verdict that depends on the collector.

Each case is written as a user would and run through ``pytester`` with nothing but
``--aliascheck`` (and a timeout, so that a hang fails the test instead of the suite).
"""

from __future__ import annotations

import textwrap

import pytest

# Imported here, not in a test: pytester drops what a test imported, and torch cannot be imported twice.
torch = pytest.importorskip("torch")


def run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_user=textwrap.dedent(body))
    return pytester.runpytest_subprocess("--aliascheck", "-p", "no:cacheprovider", "--timeout", "60", *args)


TREE = """
    import copy
    import pickle

    class Node:
        def __init__(self, parent=None):
            self.parent, self.children = parent, []
            if parent is not None: parent.children.append(self)
        def __getstate__(self): return dict(self.__dict__)
        def __setstate__(self, s): self.__dict__.update(s)

    def test_pickle_tree():
        root = Node(); Node(root)
        assert pickle.loads(pickle.dumps(root)).children

    def test_wide_tree():
        root = Node()
        for _ in range(40):
            Node(root)
        assert len(pickle.loads(pickle.dumps(root)).children) == 40
        assert len(copy.deepcopy(root).children) == 40

    def test_deep_tree():
        root = node = Node()
        for _ in range(120):
            node = Node(node)
        assert pickle.loads(pickle.dumps(root)).children

    def test_wide_and_deep_tree():
        root = Node()
        for _ in range(15):
            child = Node(root)
            for _ in range(15):
                Node(child)
        assert len(copy.deepcopy(root).children) == 15

    class Graph:  # a cyclic graph inside a state dict
        def __init__(self):
            a, b = {"id": 1}, {"id": 2}
            a["next"], b["next"] = b, a
            self.state = {"nodes": [a, b]}
            self.state["self"] = self.state
        def state_dict(self): return copy.deepcopy(self.state)
        def load_state_dict(self, sd): self.state = copy.deepcopy(sd)

    def test_cyclic_state_dict():
        g = Graph()
        sd = g.state_dict()
        g.load_state_dict(pickle.loads(pickle.dumps(sd)))
        assert g.state["nodes"][0]["next"]["next"] is g.state["nodes"][0]
"""


def test_pickling_a_getstate_class_with_a_parent_link_ends(pytester):
    """A __getstate__ the fingerprint's own pickling calls is part of that handover, never a new one.

    Before, each one became a handover with a fingerprint of its own, which called the next
    node's __getstate__ around the cycle: a 2-node tree ran past 60 s, a 40-node one past 300 s.
    """
    result = run(pytester, TREE)
    result.assert_outcomes(passed=5)
    result.stdout.no_fnmatch_line("*Timeout*")


def test_a_setstate_adopting_the_unpicklers_dict_is_not_a_write_into_the_callers_state(pytester):
    """The unpickler's fresh dict is nobody's: __setstate__ taking it over (and the node itself
    inside it gaining its attributes) is the load, not a write into a state a caller holds."""
    result = run(pytester, """
        import pickle

        class Strategy:
            def __init__(self):
                self.parent, self.opts = self, {"a": 1}
            def __getstate__(self): return dict(self.__dict__)
            def __setstate__(self, state):
                state.setdefault("extra", [])
                self.__dict__ = state   # Lightning's Strategy.__setstate__ takes the dict over

        def test_roundtrip():
            s = pickle.loads(pickle.dumps(Strategy()))
            assert s.parent is s and s.extra == []
    """)
    result.assert_outcomes(passed=1)


def test_discover_all_scans_a_deprecated_module_attribute_under_warnings_as_errors(pytester):
    """The start-up scan touches torch.distributed.reduce_op, which warns on isinstance(); with the
    project's FutureWarning turned into an error that was an INTERNALERROR (Lightning's config)."""
    pytester.makeini("[pytest]\nfilterwarnings =\n    error::FutureWarning\n")
    pytester.makeconftest("import torch.distributed")  # imported before the session's scan
    result = run(pytester, """
        class Counter:
            def __init__(self): self.n = 0
            def state_dict(self): return {"n": self.n}
            def load_state_dict(self, sd): self.n = sd["n"]

        def test_round_trip():
            c = Counter(); c.load_state_dict(c.state_dict())
            assert c.n == 0
    """, "--aliascheck-discover", "all")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


COUNTER = """
    import gc
    from unittest import mock

    class Counter:
        def __init__(self): self.state = {"n": 0, "seen": []}
        def step(self):
            self.state["n"] += 1
            self.state["seen"].append(self.state["n"])
        def state_dict(self): return self.state          # live: a keeper sees it change
        def load_state_dict(self, sd): self.state = dict(sd)
"""


@pytest.mark.parametrize("collect", ["gc.collect()", "pass"])
def test_a_holder_that_is_cyclic_garbage_is_no_keeper_whenever_the_collector_ran(pytester, collect):
    """The verdict must not depend on when the collector last ran (Lightning's dropped MagicMock):
    a dropped holder in a reference cycle keeps nothing, collected or not."""
    result = run(pytester, COUNTER + f"""
    class Holder:
        pass

    def test_dropped_cyclic_holder():
        gc.disable()
        try:
            c = Counter()
            holder = Holder()
            holder.me, holder.sd = holder, c.state_dict()
            del holder
            {collect}
            c.step()
        finally:
            gc.enable()
    """)
    result.assert_outcomes(passed=1)


def test_a_reachable_holder_is_still_a_keeper(pytester):
    """The counterpart: the same holder, still referred to, keeps the live state: a finding."""
    result = run(pytester, COUNTER + """
    class Holder:
        pass

    HOLDERS = []

    def test_kept_holder():
        c = Counter()
        holder = Holder()
        holder.me, holder.sd = holder, c.state_dict()
        HOLDERS.append(holder)
        c.step()
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]mutation]*Counter.state_dict*"])


@pytest.mark.parametrize("call", ["save(c.state_dict())", "save(obj=c.state_dict())",
                                  "save({'epoch': 1, 'state': c.state_dict()})"])
def test_a_mock_standing_in_for_a_serializer_is_no_keeper(pytester, call):
    """A Mock replacing torch.save/pickle.dump records calls: what the real function would have
    serialised at the call is not kept state (positional or keyword)."""
    result = run(pytester, COUNTER + f"""
    MOCKS = []  # alive after the test, as a mock patched over torch.save for a whole run is

    def test_save_is_mocked():
        save = mock.MagicMock()
        MOCKS.append(save)
        c = Counter()
        {call}
        c.step()
        save.assert_called_once()
    """)
    result.assert_outcomes(passed=1)


CYCLIC = """
    import copy
    import torch

    def make():
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1, momentum=0.9)
        return torch.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, scale_fn=lambda x: 1.0)

    def test_first_caller():
        ckpt = make().state_dict()
        make().load_state_dict(LOADED)

    def test_second_caller():
        ckpt = make().state_dict()
        make().load_state_dict(LOADED)
"""


def test_a_load_bug_inside_a_library_is_one_bug_at_its_own_line(pytester):
    """torch 2.13's CyclicLR.load_state_dict pops _scale_fn_custom from the caller's dict: one bug at
    the library's load, with a load fix, not one per calling line with snapshot-copy advice."""
    result = run(pytester, CYCLIC.replace("LOADED", "ckpt"))
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*aliascheck: bugs*",
        "[[]mutation] torch.optim.lr_scheduler.CyclicLR.load_state_dict (torch/optim/lr_scheduler.py:*) "
        "wrote into the state it was given: [[]'_scale_fn_custom'[]]: None -> <missing>",
        "    fix: torch/optim/lr_scheduler.py:*: CyclicLR.load_state_dict() must not consume the caller's state;*",
        "    test_user.py::test_first_caller",
        "    test_user.py::test_second_caller",
        "*1 bug (2 occurrences in 2 tests)*",
    ])


@pytest.mark.parametrize("loaded", ["copy.deepcopy(ckpt)", "dict(ckpt)"])
def test_a_load_writing_into_a_throwaway_is_not_a_finding(pytester, loaded):
    """load_state_dict(copy.deepcopy(ckpt)) or reset(dict(ckpt)): nobody else holds what the load
    popped from, so it is judged as loads are, not at once."""
    result = run(pytester, CYCLIC.replace("LOADED", loaded))
    result.assert_outcomes(passed=2)


CONTAINERS = """
    import array
    import copy
    from collections import OrderedDict, deque

    import pytest

    KEPT = []

    class Slotted:
        __slots__ = ("items",)
        def __init__(self): self.items = []

    class Attrs:
        def __init__(self): self.items = []

    MAKE = {"deque": deque, "array": lambda: array.array("i"), "bytearray": bytearray, "set": set,
            "ordereddict": OrderedDict, "slots": Slotted, "attrs": Attrs, "list": list}

    def grow(x, i):
        if isinstance(x, (deque, array.array, bytearray, list)): x.append(i)
        elif isinstance(x, set): x.add(i)
        elif isinstance(x, dict): x[i] = i
        else: x.items.append(i)

    @pytest.mark.parametrize("kind", sorted(MAKE))
    def test_kept(kind):
        class Source:
            def __init__(self): self.pos = {"seen": MAKE[kind]()}
            def get_state(self): return {"seen": COPY(self.pos["seen"])}
            def reset(self, initial_state=None): pass
        s = Source()
        KEPT.append(s.get_state())
        for i in range(3):
            grow(s.pos["seen"], i)
"""


@pytest.mark.parametrize(("copy", "outcome"), [("", "failed"), ("copy.deepcopy", "passed")])
def test_every_mutable_container_is_a_container(pytester, copy, outcome):
    """A deque, array, bytearray, set, dict subclass or __slots__ object handed out live and then changed
    is flagged as a list is; the copying twin stays clean."""
    result = run(pytester, CONTAINERS.replace("COPY", copy))
    result.assert_outcomes(**{outcome: 8})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*Source.get_state (test_user.py:*) hands out live pos[[]'seen'[]]*"])


CACHED = """
    import functools
    from collections import defaultdict

    import numpy as np

    @functools.lru_cache(maxsize=None)
    def table(n):
        return np.arange(n, dtype=float)

    @functools.lru_cache(maxsize=None)
    def implications():
        rules = defaultdict(set)
        rules["a"].add("b")
        return rules

    def test_cache():
        BODY
"""


@pytest.mark.parametrize(("body", "outcome"), [
    ("t = table(3); t[0] = 9.0; table(3)", "failed"),  # an array is plain data: edited after hand-out
    ("t = table(3).copy(); t[0] = 9.0; table(3)", "passed"),
    ("r = implications(); r['x']; r['y']; implications()", "passed"),  # a read that auto-vivifies
    ("r = implications(); r['x'].add('z'); implications()", "failed"),  # a real edit
])
def test_arrays_are_cache_values_and_a_defaultdict_read_is_no_edit(pytester, body, outcome):
    """An ndarray from lru_cache edited in place is judged like a list; reading a missing key of a
    cached defaultdict (sympy's FactRules.full_implications) only auto-vivifies: not the caller's edit."""
    result = run(pytester, CACHED.replace("BODY", body))
    result.assert_outcomes(**{outcome: 1})


ADOPTING = """
    KEPT = []

    class Buffered:
        def __init__(self): self.buf = []
        def state_dict(self): return {"buf": list(self.buf)}
        def load_state_dict(self, sd): self.buf = COPY(sd["buf"])
        def push(self, x): self.buf.append(x)
        def flush(self, n):
            out, self.buf = self.buf[:n], self.buf[n:]
            return out

    def test_retry_after_the_loader_let_go():
        ckpt = {"buf": [1, 2]}
        b = Buffered(); b.load_state_dict(ckpt)
        b.push(3)        # writes into the caller's checkpoint
        b.flush(2)       # and lets go of it
        Buffered().load_state_dict(ckpt)   # a retry from the checkpoint

    def test_loader_dropped():
        ckpt = {"buf": [1, 2]}
        KEPT.append(ckpt)
        b = Buffered(); b.load_state_dict(ckpt)
        b.push(3)
        del b

    def test_its_next_state_call():
        ckpt = {"buf": [1, 2]}
        KEPT.append(ckpt)  # still held (the test's own name is read for the last time at the load)
        b = Buffered(); b.load_state_dict(ckpt)
        b.push(3); b.flush(3)
        b.state_dict()
"""


@pytest.mark.parametrize(("copy", "outcome"), [("", "failed"), ("list", "passed")])
def test_an_adopted_part_the_loader_let_go_of_is_judged_by_what_it_adopted(pytester, copy, outcome):
    """A load keeps a list of the caller's checkpoint, appends to it, then rebinds its attribute or is
    dropped: the checkpoint changed while the loader held it. Judged at the retry, at the loader's
    death and at its next state call; the copying load stays clean."""
    result = run(pytester, ADOPTING.replace("COPY", copy))
    result.assert_outcomes(**{outcome: 3})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*Buffered.load_state_dict (test_user.py:*) keeps the state it was given;*"])


def test_the_callers_own_edit_after_the_loader_let_go_is_not_the_loaders(pytester):
    """Once the loader let go of what it adopted, the checkpoint is the caller's again to edit."""
    result = run(pytester, ADOPTING.replace("COPY", "") + """
    def test_caller_edits_its_checkpoint():
        ckpt = {"buf": [1, 2]}
        KEPT.append(ckpt)
        b = Buffered(); b.load_state_dict(ckpt)
        b.flush(2)
        ckpt["buf"].append(9)
        b.state_dict()
    """, "-k", "caller_edits")
    result.assert_outcomes(passed=1)
