"""Zero-configuration discovery: every stateful class watched, no ini option, judged precisely.

Each pattern is written as a user would, run through ``pytester`` with nothing but
``--aliascheck``; each has a corrected variant that must stay clean.
"""

from __future__ import annotations

import copy
import pickle
import textwrap

import pytest

from aliascheck.config import Options
from aliascheck.discovery import Discovery, methods, watch
from aliascheck.session import Session

torch = pytest.importorskip("torch")


def run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_user=textwrap.dedent(body))
    return pytester.runpytest_subprocess("--aliascheck", "-p", "no:cacheprovider", *args)


# -- the patterns that went unseen, each with its corrected variant -----------------------------
PLAIN = """
    class Progress:  # nobody lists this class anywhere
        def __init__(self):
            self.state = {"epoch": 0, "seen": []}

        def step(self):
            self.state["epoch"] += 1
            self.state["seen"].append(self.state["epoch"])

        def state_dict(self):
            return STATE

        def load_state_dict(self, sd):
            self.state = {"epoch": sd["epoch"], "seen": list(sd["seen"])}


    def test_checkpoint():
        p = Progress()
        checkpoints = [p.state_dict()]
        p.step()
        checkpoints.append(p.state_dict())  # the next periodic checkpoint
"""


@pytest.mark.parametrize(("state", "outcome"), [
    ("self.state", "failed"),
    ('{"epoch": self.state["epoch"], "seen": list(self.state["seen"])}', "passed"),
])
def test_a_plain_class_with_state_dict_is_watched_with_no_configuration(pytester, state, outcome):
    result = run(pytester, PLAIN.replace("STATE", state))
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*aliascheck [[]mutation]: test_user.Progress.state_dict (test_user.py:*) "
                                     "hands out live state; it changed after the handover"])


SCHEDULER = """
    import copy
    import torch


    class Warmup(torch.optim.lr_scheduler.LRScheduler):
        # A warmup wrapper that keeps the scheduler it hands over to (GradualWarmupScheduler's shape).
        def __init__(self, optimizer, after):
            self.after = after
            super().__init__(optimizer)

        def get_lr(self):
            return [g["lr"] for g in self.optimizer.param_groups]

        def step(self, epoch=None):
            super().step(epoch)
            self.after.step()

        def state_dict(self):
            return {"last_epoch": self.last_epoch, "after": AFTER}

        def load_state_dict(self, sd):
            self.last_epoch = sd["last_epoch"]
            self.after.load_state_dict(sd["after"])


    def test_rollback():
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
        sched = Warmup(opt, torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5))
        kept = sched.state_dict()
        for _ in range(3):
            opt.step()
            sched.step()
        sched.load_state_dict(kept)  # the rollback
"""


@pytest.mark.parametrize(("after", "outcome"), [("self.after", "failed"), ("self.after.state_dict()", "passed")])
def test_a_scheduler_handing_out_a_live_object_is_flagged(pytester, after, outcome):
    result = run(pytester, SCHEDULER.replace("AFTER", after))
    result.assert_outcomes(**{outcome: 1})


EXTRA = """
    import torch


    class Regressor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(2, 1)
            self.stats = {"count": 0}

        def get_extra_state(self):
            return EXTRA

        def set_extra_state(self, state):
            self.stats = dict(state)


    def test_best():
        model = Regressor()
        best = {k: v.clone() if torch.is_tensor(v) else v for k, v in model.state_dict().items()}
        model.stats["count"] += 5
        model.load_state_dict(best)
"""


@pytest.mark.parametrize(("extra", "outcome"), [("self.stats", "failed"), ("dict(self.stats)", "passed")])
def test_a_live_extra_state_carried_into_a_hand_made_checkpoint_is_followed(pytester, extra, outcome):
    result = run(pytester, EXTRA.replace("EXTRA", extra))
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*let out:  test_user.py:* in test_user.Regressor.get_extra_state",
                                     "*change:   [[]'_extra_state'][[]'count']    0 -> 5"])


DUNDER = """
    import copy


    class Run:
        def __init__(self):
            self.epoch, self.history = 0, []

        def __getstate__(self):
            return self.__dict__

        def __setstate__(self, state):
            SETSTATE


    def test_snapshot_by_copy():
        run = Run()
        snapshot = copy.copy(run)
        run.epoch = 5
        assert snapshot.epoch == EXPECTED
"""


@pytest.mark.parametrize(("setstate", "expected", "outcome"), [
    ("self.__dict__ = state", "5", "failed"),  # the copy shares the live attribute dict
    ("self.__dict__.update(state)", "0", "passed"),
])
def test_getstate_returning_the_live_dict_shared_by_a_copy_is_flagged(pytester, setstate, expected, outcome):
    result = run(pytester, DUNDER.replace("SETSTATE", setstate).replace("EXPECTED", expected))
    result.assert_outcomes(**{outcome: 1})


CACHED = """
    from torchdata.nodes import BaseNode


    class Records(BaseNode):
        def reset(self, initial_state=None):
            super().reset(initial_state)
            self.state = dict(initial_state) if initial_state else {"offset": 0}

        def next(self):
            self.state["offset"] += 1
            return self.state["offset"]

        def get_state(self):
            return SOURCE


    class Peek(BaseNode):
        # Looks one item ahead, caching the source's state before it (the has_next pattern).
        def __init__(self, source):
            super().__init__()
            self.source = source

        def reset(self, initial_state=None):
            super().reset(initial_state)
            self.source.reset(initial_state["source"] if initial_state else None)
            self.cached = None

        def next(self):
            self.cached = self.source.state_dict()
            return next(self.source)

        def get_state(self):
            return {"source": self.cached}


    def test_resume():
        node = Peek(Records())
        next(node)
        first = node.state_dict()
        next(node)
        second = node.state_dict()
        assert first and second
"""


@pytest.mark.parametrize(("source", "outcome"), [("self.state", "failed"), ("dict(self.state)", "passed")])
def test_a_state_cached_across_next_is_judged_when_handed_out(pytester, source, outcome):
    result = run(pytester, CACHED.replace("SOURCE", source))
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*the next handover of the same object*"])


VIEW = """
    import torch


    def test_best_weights():
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        best = {k: VIEW for k, v in model.state_dict().items()}
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
        model.load_state_dict(best)
"""


@pytest.mark.parametrize(("view", "outcome"), [
    ("v.detach()", "failed"), ("v.cpu()", "failed"), ("v[:]", "failed"), ("v.view(v.shape)", "failed"),
    ("v.clone()", "passed"), ("v.detach().clone()", "passed"),
])
def test_a_new_tensor_object_over_live_memory_is_the_live_parameter(pytester, view, outcome):
    result = run(pytester, VIEW.replace("VIEW", view))
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*shares:   Linear._parameters[[]'*']"])


NUMPY = """
    import numpy as np


    class Shuffler:
        def __init__(self):
            self.order = np.arange(8)

        def state_dict(self):
            return {"remaining": VIEW}

        def load_state_dict(self, sd):
            self.order = np.array(sd["remaining"])


    def test_epoch():
        s = Shuffler()
        kept = s.state_dict()
        s.order[:] = s.order[::-1]
        s.load_state_dict(kept)  # the restore
"""


@pytest.mark.parametrize(("view", "outcome"), [("self.order[:]", "failed"), ("self.order.copy()", "passed")])
def test_an_array_slice_is_the_live_array(pytester, view, outcome):
    pytest.importorskip("numpy")
    result = run(pytester, NUMPY.replace("VIEW", view))
    result.assert_outcomes(**{outcome: 1})


LOADER = """
    from torch.utils.data import IterableDataset
    from torchdata.stateful_dataloader import StatefulDataLoader


    class Records(IterableDataset):
        def __init__(self):
            self.state = {"index": 0}

        def __iter__(self):
            return self

        def __next__(self):
            if self.state["index"] >= 10:
                raise StopIteration
            self.state["index"] += 1
            return self.state["index"]

        def state_dict(self):
            return STATE

        def load_state_dict(self, sd):
            self.state = dict(sd)


    def test_resume():
        dl = StatefulDataLoader(Records(), batch_size=None, num_workers=0)
        it = iter(dl)
        next(it)
        kept = dl.state_dict()
        next(it)
        next(it)
        again = StatefulDataLoader(Records(), batch_size=None, num_workers=0)
        again.load_state_dict(kept)  # the resume
        assert next(iter(again)) == EXPECTED
"""


@pytest.mark.parametrize(("state", "expected", "outcome"), [
    ("self.state", "4", "failed"),  # the kept checkpoint moved on: the resume skips two items
    ("dict(self.state)", "2", "passed"),
])
def test_a_stateful_dataloader_dataset_state_is_watched(pytester, state, expected, outcome):
    pytest.importorskip("torchdata.stateful_dataloader")
    result = run(pytester, LOADER.replace("STATE", state).replace("EXPECTED", expected), "-W", "ignore::UserWarning")
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*owner:    test_user.Records*"])


# -- the three false-positive shapes ------------------------------------------------------------
CORRECT = """
    import copy
    import torch


    def test_teacher_trains_after_its_filtered_state_was_loaded_into_a_student():
        teacher, student = torch.nn.Linear(3, 1), torch.nn.Linear(3, 1)
        student.load_state_dict({k: v for k, v in teacher.state_dict().items() if k != "bias"}, strict=False)
        opt = torch.optim.SGD(teacher.parameters(), lr=0.5)
        teacher(torch.ones(2, 3)).sum().backward()
        opt.step()


    def test_an_optimizer_adopting_a_fresh_deepcopy():
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.Adam(model.parameters())
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
        ckpt = opt.state_dict()
        fresh = torch.optim.Adam(model.parameters())
        fresh.load_state_dict(copy.deepcopy(ckpt))
        model(torch.ones(2, 3)).sum().backward()
        fresh.step()


    def test_a_holder_editing_its_own_fresh_dict():
        model, other = torch.nn.Linear(3, 1), torch.nn.Linear(3, 1)
        sd = model.state_dict()
        sd.pop("bias")
        other.load_state_dict(sd, strict=False)
"""


def test_the_three_false_positive_shapes_are_clean(pytester):
    result = run(pytester, CORRECT)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["aliascheck: 3 tests, * checked: no bugs, 0 warnings, *"])


# -- scope -------------------------------------------------------------------------------------
def test_scope_off_sees_none_of_it_and_installed_packages_are_out_of_project_scope(pytester):
    result = run(pytester, PLAIN.replace("STATE", "self.state"), "--aliascheck-discover=off")
    result.assert_outcomes(passed=1)
    discovery = Discovery("project", [str(pytester.path)])
    assert discovery.in_scope(str(pytester.path / "test_user.py"))
    assert not discovery.in_scope(torch.__file__) and not discovery.in_scope(copy.__file__)
    assert Discovery("all", ["/nowhere"]).in_scope(torch.__file__)


def test_a_class_defined_inside_a_test_function_is_watched(pytester):
    result = run(pytester, """
        def test_local():
            class Local:
                def __init__(self):
                    self.s = {"n": 0}

                def state_dict(self):
                    return self.s

                def load_state_dict(self, sd):
                    self.s = dict(sd)

            obj = Local()
            kept = [obj.state_dict()]
            obj.s["n"] += 1
            obj.load_state_dict(kept[0])
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*owner:    test_user.test_local.<locals>.Local*"])


def test_a_class_imported_by_a_conftest_before_the_session_is_watched(pytester):
    pytester.makepyfile(mystate="""
        class Counter:
            def __init__(self):
                self.s = {"n": 0}

            def state_dict(self):
                return self.s

            def load_state_dict(self, sd):
                self.s = dict(sd)
    """)
    pytester.makeconftest("import mystate  # imported before aliascheck's session starts\n")
    result = run(pytester, """
        import mystate

        def test_kept():
            c = mystate.Counter()
            kept = [c.state_dict()]
            c.s["n"] += 1
            c.load_state_dict(kept[0])
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*owner:    mystate.Counter*"])


# -- class creation is never broken -------------------------------------------------------------
KINDS = """
    import abc
    import dataclasses
    import enum
    import typing
    import collections

    import attrs
    import torch


    class WithABC(abc.ABC):
        @abc.abstractmethod
        def state_dict(self): ...

        def load_state_dict(self, sd):
            self.sd = sd


    class Concrete(WithABC):
        def state_dict(self):
            return {"a": 1}


    class Color(enum.Enum):
        RED = 1

        def state_dict(self):
            return {"value": self.value}

        def load_state_dict(self, sd):
            pass


    @dataclasses.dataclass(slots=True)
    class Slotted:
        n: int = 0

        def state_dict(self):
            return {"n": self.n}

        def load_state_dict(self, sd):
            self.n = sd["n"]


    @attrs.define
    class WithAttrs:
        n: int = 0

        def state_dict(self):
            return {"n": self.n}

        def load_state_dict(self, sd):
            self.n = sd["n"]


    @typing.runtime_checkable
    class Proto(typing.Protocol):
        def state_dict(self) -> dict: ...

        def load_state_dict(self, sd: dict) -> None: ...


    T = typing.TypeVar("T")


    class Box(typing.Generic[T]):
        def __init__(self, item: T):
            self.item = item

        def state_dict(self):
            return {"item": self.item}

        def load_state_dict(self, sd):
            self.item = sd["item"]


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def get_extra_state(self):
            return {"v": 1}

        def set_extra_state(self, state):
            self.v = state["v"]


    class FromC(collections.OrderedDict):  # a C-extension base
        def state_dict(self):
            return dict(self)

        def load_state_dict(self, sd):
            self.update(sd)


    class StaticOnly:
        state_dict = {"not": "callable"}  # left alone

        @staticmethod
        def load_state_dict(sd):
            return sd


    class Meta1(type):
        pass


    class Meta2(type):
        pass


    def test_every_kind_of_class_behaves_as_without_aliascheck():
        assert Concrete().state_dict() == {"a": 1}
        assert Color.RED.state_dict() == {"value": 1} and Color(1) is Color.RED
        s = Slotted(3)
        assert s.state_dict() == {"n": 3} and not hasattr(s, "__dict__")
        w = WithAttrs(2)
        w.load_state_dict({"n": 5})
        assert w.state_dict() == {"n": 5}
        assert isinstance(Concrete(), Proto)
        assert Box[int](4).state_dict() == {"item": 4}
        net = Net()
        other = Net()
        other.load_state_dict(net.state_dict())
        assert other.v == 1
        f = FromC(a=1)
        assert f.state_dict() == {"a": 1}
        assert StaticOnly.state_dict == {"not": "callable"} and StaticOnly.load_state_dict(3) == 3
        with pytest.raises(TypeError, match="metaclass conflict"):
            class Both(Meta1("A", (), {}), Meta2("B", (), {})):
                pass
        with pytest.raises(ZeroDivisionError):
            class Raising:
                x = 1 / 0
"""


def test_class_creation_is_never_broken_nor_changed(pytester):
    pytest.importorskip("attrs")
    result = run(pytester, "import pytest\n" + textwrap.dedent(KINDS))
    result.assert_outcomes(passed=1)


def test_only_plain_functions_of_a_complete_protocol_are_wrapped():
    class Half:
        def state_dict(self):
            return {}

    class Full(Half):
        def load_state_dict(self, sd):
            pass

    class NotCallable:
        state_dict = 3

        def load_state_dict(self, sd):
            pass

    assert methods(Half) == ([], []) and methods(Full) == ([], ["load_state_dict"])
    assert methods(NotCallable) == ([], []) and watch(NotCallable) is None


# -- bad input ---------------------------------------------------------------------------------
class Raising:
    def __init__(self):
        self.s = {"n": 0}

    def state_dict(self):
        raise ValueError("the user's own error")

    def load_state_dict(self, sd):
        raise KeyError("missing")

    def __getstate__(self):
        raise RuntimeError("no pickling")

    def __setstate__(self, state):
        self.__dict__.update(state)


def test_a_raising_state_method_propagates_unchanged_and_records_nothing():
    session = Session(Options(enabled=True))
    session.start()
    undo = watch(Raising)
    try:
        session.begin_test("t")
        obj = Raising()
        with pytest.raises(ValueError, match="the user's own error") as info:
            obj.state_dict()
        assert info.value.__traceback__ is not None
        with pytest.raises(KeyError):
            obj.load_state_dict({"n": 1})
        with pytest.raises(RuntimeError, match="no pickling"):
            copy.copy(obj)
        with pytest.raises(RuntimeError, match="no pickling"):
            pickle.dumps(obj)
        assert session.ledger.stats.handovers == 0
        assert session.end_test(0) == []
    finally:
        if undo is not None:
            undo()
        session.stop()
