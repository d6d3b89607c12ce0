"""Boundary handovers: live objects crossing between the project's code and library code.

Each bug shape of the issue is a test written as a user would, beside its corrected twin,
run through ``pytester`` with nothing but ``--aliascheck``. The library is a real one (torch,
numpy, logging) or ``mylib``, a module installed outside the project (under a
``site-packages`` directory), so that what is "library code" is decided as for a user.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aliascheck.boundary.rewrite import SHAPES

# Imported here, not in a test: pytester drops what a test imported, and torch cannot be imported twice.
torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

MYLIB = '''
"""A library outside the project: a solver with a callback, a store that keeps what it is given."""

import functools


def solve(f, x0, steps=5, callback=None):
    x = list(x0)  # the solver's own working list, updated in place at every step
    stats = {"step": 0, "f": f(x)}
    for i in range(steps):
        for j in range(len(x)):
            x[j] -= 0.1 * x[j]
        stats["step"], stats["f"] = i + 1, f(x)
        if callback is not None:
            callback(x, stats)
    return x  # handed out after its last change


def numbers(n, size=3):
    buf = [0] * size  # one buffer, refilled for every item
    for i in range(n):
        for j in range(size):
            buf[j] = i
        yield buf


class Store:
    def __init__(self):
        self.kept = []

    def keep(self, value):
        self.kept.append(value)  # keeps the caller's object itself

    def snapshot(self, value):
        self.kept.append(dict(value))  # keeps a copy


class Counter:
    def __init__(self):
        self.counts = [0, 0]  # one live list of ints, handed out by current()

    def step(self):
        self.counts[0] += 1

    def current(self):
        return self.counts


def fill(row, i):
    row["i"] = i  # writes into the caller's dict


class Link:
    def __init__(self, url):
        self.url = url
        self.parts = [url]

    @property
    def text(self):
        return self.url

    @functools.cached_property
    def query(self):  # filled into the instance's dict by its first read
        return {"q": self.url}


def links(*urls):
    return [Link(u) for u in urls]


def annotate(found):
    for link in found:
        link.parts.append("seen")  # the library changes what it handed out


def batches(callback, n=3):
    rows = [{"i": 0}, {"i": 0}]  # the library's own rows, refilled for every batch
    for i in range(n):
        for row in rows:
            row["i"] = i
        callback(rows)


class Entry:
    def __init__(self, msg):
        self.msg = msg


def register(table, name):
    table[name] = len  # a library adding its entry to a table it was handed


def emit(callback, msg):
    entry = Entry(msg)  # the library's own entry, rendered into after its callbacks ran
    callback({"event": msg, "_record": entry})
    entry.msg = "[info] " + msg
'''


@pytest.fixture
def lib(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    site = pytester.path / "env" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "mylib.py").write_text(textwrap.dedent(MYLIB))
    monkeypatch.setenv("PYTHONPATH", str(site))


def run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_user=textwrap.dedent(body))
    return pytester.runpytest_subprocess("--aliascheck", "-p", "no:cacheprovider", "-rA", *args)


def outcomes(result: pytest.RunResult) -> dict[str, str]:
    """test name -> PASSED/FAILED, from the -rA short summary."""
    out = {}
    for line in result.outlines:
        for word in ("PASSED", "FAILED", "ERROR"):
            if line.startswith(word + " ") and "::" in line:
                out[line.split("::", 1)[1].split(" ", 1)[0]] = word
    return out


def flagged(result: pytest.RunResult) -> set[str]:
    return {name for name, state in outcomes(result).items() if state != "PASSED"}


# -- library -> project, kept by the project ------------------------------------------


LIBRARY_TO_PROJECT = """
    import copy
    import torch
    import mylib

    def test_hook_keeps_output_then_inplace_relu():
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(inplace=True))
        acts = []
        model[0].register_forward_hook(lambda m, i, output: acts.append(output))
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn(2, 4))
        assert len(acts) == 3

    def test_hook_keeps_a_clone():
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(inplace=True))
        acts = []
        def keep(m, i, output):
            acts.append(output.detach().clone())
        model[0].register_forward_hook(keep)
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn(2, 4))
        assert len(acts) == 3

    def test_best_parameters_kept_live():
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        best = None
        for epoch in range(3):
            opt.zero_grad()
            model(torch.randn(4, 3)).pow(2).mean().backward()
            opt.step()
            best = list(model.parameters())
        assert len(best) == 2

    def test_best_parameters_in_a_comprehension_and_a_tuple_target():
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        best_loss, best = float("inf"), None
        for epoch in range(3):
            opt.zero_grad()
            loss = model(torch.randn(4, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            best_loss, best = loss.item(), [p for p in model.parameters()]
        assert len(best) == 2

    def test_best_parameters_cloned_in_a_comprehension():
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        best_loss, best = float("inf"), None
        for epoch in range(3):
            opt.zero_grad()
            loss = model(torch.randn(4, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            best_loss, best = loss.item(), [p.detach().clone() for p in model.parameters()]
        assert len(best) == 2

    def test_best_parameters_cloned():
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        best = None
        for epoch in range(3):
            opt.zero_grad()
            model(torch.randn(4, 3)).pow(2).mean().backward()
            opt.step()
            best = [p.detach().clone() for p in model.parameters()]
        assert len(best) == 2

    def test_generator_reused_buffer_collected():
        items = []
        for item in mylib.numbers(4):
            items.append(item)
        assert len(items) == 4

    def test_generator_items_copied():
        items = []
        for item in mylib.numbers(4):
            items.append(list(item))
        assert items[-1] == [3, 3, 3]

    def test_callback_keeps_the_solvers_live_list():
        history = []
        def record(x, stats):
            history.append(x)
        mylib.solve(lambda x: sum(v * v for v in x), [1.0, 2.0], callback=record)
        assert len(history) == 5

    def test_callback_keeps_copies():
        history = []
        def record(x, stats):
            history.append(list(x))
        mylib.solve(lambda x: sum(v * v for v in x), [1.0, 2.0], callback=record)
        assert history[0] != history[-1]
"""


def test_library_to_project(pytester: pytest.Pytester, lib: None) -> None:
    result = run(pytester, LIBRARY_TO_PROJECT)
    assert flagged(result) == {"test_hook_keeps_output_then_inplace_relu", "test_best_parameters_kept_live",
                               "test_best_parameters_in_a_comprehension_and_a_tuple_target",
                               "test_generator_reused_buffer_collected", "test_callback_keeps_the_solvers_live_list"}
    result.stdout.fnmatch_lines([
        "*acts holds 3 live Tensors (handed out by torch.nn.modules.module.Module._call_impl (callback argument)),"
        " changed after it was kept: acts[[]0]: tensor bytes changed*",
        "*keep a copy: acts.append(output.detach().clone())*",
    ], consecutive=False)
    result.stdout.fnmatch_lines([
        "*best holds a live list (handed out by list(model.parameters())), changed after it was kept: best[[]0]*",
        "*keep a copy: best = [[]t.detach().clone() for t in list(model.parameters())]*",
    ], consecutive=False)
    result.stdout.fnmatch_lines(["*items holds one live list 4 times (handed out by mylib.numbers(4), yielded)*"])
    result.stdout.fnmatch_lines([
        "*best holds a live list (handed out by [[]p for p in model.parameters()[]]), changed after it was kept*"])
    result.stdout.fnmatch_lines([
        "*history holds one live list 5 times (handed out by mylib.solve (callback argument)), changed after it "
        "was kept: history[[]0]*",
        "*keep a copy: history.append(copy.deepcopy(x))*",
    ], consecutive=False)


# -- project -> library, kept by the library -----------------------------------------


PROJECT_TO_LIBRARY = """
    import io
    import logging
    import logging.handlers
    import numpy as np
    import torch
    import mylib

    def _buffered_log(snapshot):
        stream = io.StringIO()
        buffered = logging.handlers.MemoryHandler(100, flushLevel=logging.ERROR, target=logging.StreamHandler(stream))
        log = logging.getLogger("boundary-" + str(snapshot))
        log.setLevel(logging.INFO)
        log.propagate = False
        log.addHandler(buffered)
        state = {"setpoint": 20}
        for setpoint in (21, 22):
            state["setpoint"] = setpoint
            if snapshot:
                log.info("state %s", dict(state))
            else:
                log.info("state %s", state)
        buffered.flush()
        log.removeHandler(buffered)
        return stream.getvalue()

    def test_logged_dict_changed_while_buffered():
        assert _buffered_log(False)

    def test_logged_snapshot():
        assert "21" in _buffered_log(True)

    def test_param_groups_reused_for_a_second_optimizer():
        model = torch.nn.Linear(2, 1)
        groups = [{"params": model.parameters(), "lr": 0.1}]
        first = torch.optim.SGD(groups, lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(first, step_size=1, gamma=0.5)
        first.step(); sched.step()
        second = torch.optim.SGD(groups, lr=0.1)
        assert second.param_groups[0]["lr"] == 0.05

    def test_param_groups_built_anew():
        model = torch.nn.Linear(2, 1)
        def groups():
            return [{"params": model.parameters(), "lr": 0.1}]
        first = torch.optim.SGD(groups(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(first, step_size=1, gamma=0.5)
        first.step(); sched.step()
        second = torch.optim.SGD(groups(), lr=0.1)
        assert second.param_groups[0]["lr"] == 0.1

    def test_from_numpy_buffer_refilled():
        buf = np.zeros((2, 2), dtype=np.float32)
        chunks = []
        for i in range(3):
            buf[:] = i
            chunks.append(torch.utils.data.TensorDataset(torch.from_numpy(buf)))
        assert len(chunks) == 3

    def test_tensor_copy_of_buffer():
        buf = np.zeros((2, 2), dtype=np.float32)
        chunks = []
        for i in range(3):
            buf[:] = i
            chunks.append(torch.utils.data.TensorDataset(torch.tensor(buf)))
        assert float(chunks[0].tensors[0].sum()) == 0.0

    def test_store_keeps_config_then_changed():
        store = mylib.Store()
        cfg = {"lr": 0.1}
        store.keep(cfg)
        cfg["lr"] = 0.2
        assert store.kept[0]["lr"] == 0.2

    def test_store_snapshots_config():
        store = mylib.Store()
        cfg = {"lr": 0.1}
        store.snapshot(cfg)
        cfg["lr"] = 0.2
        assert store.kept[0]["lr"] == 0.1
"""


def test_project_to_library(pytester: pytest.Pytester, lib: None) -> None:
    result = run(pytester, PROJECT_TO_LIBRARY)
    assert flagged(result) == {"test_logged_dict_changed_while_buffered",
                               "test_param_groups_reused_for_a_second_optimizer",
                               "test_from_numpy_buffer_refilled", "test_store_keeps_config_then_changed"}
    result.stdout.fnmatch_lines([
        "*logging.Logger.info kept state; the project changed it at test_user.py:*: state[[]'setpoint']: 21 -> 22",
        "*pass a copy (dict(state)) to info, or do not change state while it keeps it",
        "*torch.optim.sgd.SGD kept groups[[]0]; SGD changed it, and it was passed again at test_user.py:*: "
        "groups[[]0][[]'lr']: 0.1 -> 0.05",
        "*torch.from_numpy kept buf; the project changed it at test_user.py:*: buf: array bytes changed*",
        "*mylib.Store.keep kept cfg; the project changed it at test_user.py:*: cfg[[]'lr']: 0.1 -> 0.2",
    ], consecutive=False)


LIBRARY_HOLDS_FOR_A_LATER_CALL = """
    import contextlib
    import dataclasses
    import weakref

    import mylib

    def report(stats):
        return dict(stats)

    class Resource:
        pass

    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int

        def __post_init__(self):
            cache = {}
            object.__setattr__(self, "_cache", cache)  # the frozen dataclass's own attribute store
            cache["norm"] = abs(self.x)

    def test_exit_stack_callback_reads_the_stats_live():
        stats = {"n": 0}
        with contextlib.ExitStack() as stack:
            stack.callback(report, stats)
            stats["n"] += 1

    def test_finalizer_reads_the_stats_live():
        res, stats = Resource(), {"n": 0}
        weakref.finalize(res, report, stats)
        stats["n"] += 1
        del res

    def test_monkeypatch_setitem_of_an_existing_key(monkeypatch):
        d = {"a": 1}
        monkeypatch.setitem(d, "a", 2)
        d["b"] = 3

    def test_object_setattr_in_a_frozen_dataclass():
        assert Point(-2)._cache == {"norm": 2}

    def test_store_keeps_config_then_changed():
        store = mylib.Store()
        cfg = {"lr": 0.1}
        store.keep(cfg)
        cfg["lr"] = 0.2
"""


def test_what_a_library_holds_for_a_later_call_or_an_undo_is_no_record(pytester: pytest.Pytester, lib: None) -> None:
    """*Handed* needs a library that kept the value as a record of the past. A call given a function
    among its arguments keeps the others for that later call, which reads them live (``ExitStack.callback``,
    ``weakref.finalize``); pytest's ``monkeypatch`` keeps what it set to undo it; ``object.__setattr__`` is
    the attribute store itself. A library's ``keep(cfg)`` of a config then changed is still a finding."""
    result = run(pytester, LIBRARY_HOLDS_FOR_A_LATER_CALL)
    assert flagged(result) == {"test_store_keeps_config_then_changed"}
    assert len(outcomes(result)) == 5




def test_an_exception_keeping_its_arguments_is_the_projects_own_object(pytester: pytest.Pytester) -> None:
    """``super().__init__(type_map)`` in the project's Exception subclass: ``BaseException.__init__`` (a
    C slot, bound as a method-wrapper) keeps the argument in the project's own exception's ``args``,
    not a library's record. The owner writing its dict later is clean (glom's UnregisteredTarget)."""
    result = run(pytester, """
        class Unregistered(Exception):
            def __init__(self, type_map):
                self.type_map = type_map
                super().__init__(type_map)

        def test_the_owner_extends_what_an_exception_keeps():
            type_map = {}
            exc = Unregistered(type_map)
            type_map[object] = iter
            assert exc.args[0] is type_map
    """)
    assert flagged(result) == set()
    assert len(outcomes(result)) == 1

def test_a_live_setting_a_library_reads_is_not_a_message(pytester: pytest.Pytester, lib: None) -> None:
    """A tensor learning rate an optimizer keeps under a name and reads live is a setting: scaling it in
    place is how it is used (torch's own test_constant_initial_lr). The same change to a value a
    library keeps in a history (a list) is the bug."""
    result = run(pytester, """
        import torch
        import mylib

        def test_tensor_lr_scaled_in_place():
            model = torch.nn.Linear(2, 1)
            lr = torch.tensor(0.1)
            opt = torch.optim.SGD(model.parameters(), lr=lr)
            lr.mul_(0.1)
            assert opt.param_groups[0]["lr"].item() < 0.1

        def test_tensor_kept_in_a_history_then_scaled():
            store = mylib.Store()
            lr = torch.tensor(0.1)
            store.keep(lr)
            lr.mul_(0.1)
            assert store.kept[0].item() < 0.1
    """)
    assert flagged(result) == {"test_tensor_kept_in_a_history_then_scaled"}


def test_what_a_read_fills_in_and_heap_entries_the_project_owns_are_no_change(
        pytester: pytest.Pytester, lib: None) -> None:
    """A cached_property materialised by a read changes nothing (boltons' urlutils); entries the project
    keeps in its own heap through heapq/bisect are its own to mark (boltons' queueutils). Their twins: a
    library changing what it handed out, and a library object keeping the project's entry."""
    result = run(pytester, """
        import bisect
        import heapq
        import mylib

        def test_cached_property_read_later():
            found = mylib.links("a", "b")
            kept = []
            kept.append(found)
            assert [link.query["q"] for link in found] == ["a", "b"]
            kept.append(found)

        def test_library_changes_what_it_handed_out():
            found = mylib.links("a", "b")
            kept = []
            kept.append(found)
            mylib.annotate(found)
            kept.append(found)

        def test_heap_entries_marked_removed():
            heap, pq = [], []
            entry = [2, 0, "task"]
            heapq.heappush(heap, entry)
            bisect.insort(pq, entry)
            entry[-1] = None  # removed, as a priority queue marks it
            assert heap[0][-1] is None and pq[0][-1] is None

        def test_library_object_keeps_the_entry():
            store = mylib.Store()
            entry = [2, 0, "task"]
            store.keep(entry)
            entry[-1] = None
    """)
    assert flagged(result) == {"test_library_changes_what_it_handed_out", "test_library_object_keeps_the_entry"}


# -- memory views kept ---------------------------------------------------------------------


VIEWS = """
    import io
    import numpy as np
    import torch

    def _train(model, steps=3):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(steps):
            opt.zero_grad()
            model(torch.randn(4, 3)).pow(2).mean().backward()
            opt.step()

    def test_weight_baseline_is_a_view():
        model = torch.nn.Linear(3, 1)
        w0 = model.weight.detach().numpy()
        _train(model)
        assert w0.shape == (1, 3)

    def test_weight_baseline_is_a_copy():
        model = torch.nn.Linear(3, 1)
        w0 = model.weight.detach().clone().numpy()
        _train(model)
        assert not np.array_equal(w0, model.weight.detach().numpy())

    def test_frombuffer_records_of_a_reused_buffer():
        stream = io.BytesIO(bytes(range(16)))
        buf = bytearray(4)
        records = []
        while stream.readinto(buf) == 4:
            records.append(np.frombuffer(buf, dtype=np.uint8))
        assert len(records) == 4

    def test_frombuffer_records_copied():
        stream = io.BytesIO(bytes(range(16)))
        buf = bytearray(4)
        records = []
        while stream.readinto(buf) == 4:
            records.append(np.frombuffer(buf, dtype=np.uint8).copy())
        assert records[0][0] == 0

    def test_dataset_item_changed_in_place():
        features = torch.randn(4, 2)
        dataset = torch.utils.data.TensorDataset(features)
        for i in range(len(dataset)):
            sample = dataset[i][0]
            sample -= 1.0
        assert len(dataset) == 4

    def test_tensors_of_one_refilled_array_bound_first():
        buf = np.zeros(3, dtype=np.float32)
        items = []
        for i in range(3):
            buf[:] = i
            t = torch.as_tensor(buf)
            items.append(t)
        assert len(items) == 3

    def test_tensors_of_one_refilled_array_cloned():
        buf = np.zeros(3, dtype=np.float32)
        items = []
        for i in range(3):
            buf[:] = i
            t = torch.as_tensor(buf).clone()
            items.append(t)
        assert [float(t[0]) for t in items] == [0.0, 1.0, 2.0]

    def test_tensors_of_distinct_arrays():
        bufs = [np.zeros(3, dtype=np.float32) for _ in range(3)]
        items = []
        for i in range(3):
            bufs[i][:] = i
            t = torch.as_tensor(bufs[i])
            items.append(t)
        assert [float(t[0]) for t in items] == [0.0, 1.0, 2.0]

    def test_tensor_of_a_refilled_array_in_one_slot():
        buf = np.zeros(3, dtype=np.float32)
        latest = [None]
        for i in range(3):
            buf[:] = i
            t = torch.as_tensor(buf)
            latest[0] = t
        assert float(latest[0][0]) == 2.0

    def test_dataset_item_changed_out_of_place():
        features = torch.randn(4, 2)
        dataset = torch.utils.data.TensorDataset(features)
        for i in range(len(dataset)):
            sample = dataset[i][0]
            sample = sample - 1.0
        assert len(dataset) == 4
"""


def test_views_kept(pytester: pytest.Pytester) -> None:
    result = run(pytester, VIEWS)
    assert flagged(result) == {"test_weight_baseline_is_a_view", "test_frombuffer_records_of_a_reused_buffer",
                               "test_dataset_item_changed_in_place", "test_tensors_of_one_refilled_array_bound_first"}
    result.stdout.fnmatch_lines([
        "*w0 holds a live ndarray (handed out by model.weight.detach().numpy()), changed after it was kept: w0: "
        "array bytes changed*",
        "*keep a copy: w0 = model.weight.detach().numpy().copy()",
        "*records holds 4 ndarrays over one live memory (handed out by np.frombuffer(buf, dtype=np.uint8))*",
        "*torch.utils.data.dataset.TensorDataset kept features; the project changed it at test_user.py:*",
        "*items holds 3 Tensors over one live memory (handed out by torch.as_tensor(buf)), changed after it was kept*",
    ], consecutive=False)


# -- copies that share ---------------------------------------------------------------------


COPIES = """
    import copy
    import numpy as np

    DEFAULTS = {"settings": {"level": "INFO"}, "paths": {"cache": "/tmp"}, "layers": [64]}

    def load_shallow(overrides):
        config = DEFAULTS.copy()
        config["settings"].update(overrides)
        return config

    def load_deep(overrides):
        config = copy.deepcopy(DEFAULTS)
        config["settings"].update(overrides)
        return config

    def test_defaults_shallow_copy_written():
        load_shallow({"level": "DEBUG"})
        assert DEFAULTS["settings"]["level"] == "DEBUG"
        DEFAULTS["settings"]["level"] = "INFO"

    def test_defaults_deep_copy():
        load_deep({"level": "DEBUG"})
        assert DEFAULTS["settings"]["level"] == "INFO"

    def test_board_rows_shared():
        board = [["T", "-"], ["-", "T"]]
        shown = copy.copy(board)
        for row in shown:
            row[0] = "X"
        assert board[0][0] == "X"

    def test_board_rows_copied():
        board = [["T", "-"], ["-", "T"]]
        shown = [list(row) for row in board]
        for row in shown:
            row[0] = "X"
        assert board[0][0] == "T"

    def test_top_level_write_of_a_shallow_copy():
        base = {"a": [1], "b": 2}
        mine = base.copy()
        mine["b"] = 3
        mine["a"] = [9]
        assert base == {"a": [1], "b": 2}

    def test_defaults_dict_copied_then_nested_appended():
        cfg = dict(DEFAULTS)
        cfg["layers"].append(32)
        assert DEFAULTS["layers"] == [64, 32]
        DEFAULTS["layers"].remove(32)

    def test_defaults_dict_copied_then_overridden():
        cfg = dict(DEFAULTS)
        cfg["layers"] = [16]
        cfg["settings"] = {"level": "WARN"}
        assert DEFAULTS["layers"] == [64]

    def test_object_array_copy_shares_its_lists():
        tokens = np.empty(2, dtype=object)
        tokens[0], tokens[1] = [1, 2], [3]
        more = np.copy(tokens)
        more[0].append(7)
        assert tokens[0] == [1, 2, 7]

    class Tokenizer:  # the pickle documentation's __getstate__ idiom: the state copy is pickled at once
        def __init__(self):
            self.cache = {}

        def add(self, word):
            self.cache[word] = len(self.cache)

        def __getstate__(self):
            state = self.__dict__.copy()
            return state

        def __setstate__(self, state):
            self.__dict__.update(state)

    def test_getstate_copy_pickled_then_the_source_written():
        import pickle
        tok = Tokenizer()
        blob = pickle.dumps(tok)
        tok.add("x")
        assert pickle.loads(blob).cache == {}
"""


def test_copies_that_share(pytester: pytest.Pytester) -> None:
    result = run(pytester, COPIES)
    assert flagged(result) == {"test_defaults_shallow_copy_written", "test_board_rows_shared",
                               "test_object_array_copy_shares_its_lists",
                               "test_defaults_dict_copied_then_nested_appended"}
    result.stdout.fnmatch_lines([
        "*config is a shallow copy: writing config[[]'settings'] also changes its source's [[]'settings']",
        "*make a deep copy: config = copy.deepcopy(DEFAULTS)",
        "*shown is a shallow copy: writing shown[[]0] also changes its source's [[]0]",
        "*more is a shallow copy: writing more[[]0] also changes its source's [[]0]",
    ], consecutive=False)


# -- precision: correct code a naive boundary detector would flag ------------------------


PRECISION = """
    import copy
    import json
    import pickle
    import types
    import numpy as np
    import torch
    import mylib

    class Parser:  # mistune's shape: a dispatch table of its own bound methods; its own cache
        def __init__(self):
            self.cache = {}
            self.methods = [self.parse for _ in "x"]

        def parse(self, s):
            self.cache[s] = s.upper()
            return self.cache[s]

    def test_dispatch_tables_of_bound_methods_while_the_parser_fills_its_cache():
        for text in ("a", "b"):
            assert Parser().parse(text) == text.upper()

    def test_row_filled_after_append():
        rows = []
        for i in range(3):
            row = []
            rows.append(row)
            row.append(i)
        assert rows == [[0], [1], [2]]

    def test_lr_through_param_groups():
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD([{"params": model.parameters()}], lr=0.1)
        opt.param_groups[0]["lr"] = 0.01
        opt.step()
        assert opt.param_groups[0]["lr"] == 0.01

    def test_lr_warmup_through_named_groups():
        model = torch.nn.Linear(2, 1)
        groups = [{"params": model.parameters(), "lr": 0.1}]  # still named: HF's optimizer_grouped_parameters
        opt = torch.optim.SGD(groups)
        for g in opt.param_groups:
            g["lr"] = 0.01  # the library's live setting, set on purpose
        opt.step()
        assert groups[0]["lr"] == 0.01

    def test_registered_buffer_updated():
        class Running(torch.nn.Module):
            def __init__(self):
                super().__init__()
                mean = torch.zeros(3)
                self.register_buffer("mean", mean)
                self.mean_alias = mean
            def update(self, x):
                self.mean.mul_(0.9).add_(0.1 * x)
        module = Running()
        for _ in range(3):
            module.update(torch.ones(3))
        buf = torch.zeros(2)
        plain = torch.nn.Module()
        plain.register_buffer("b", buf)
        buf.add_(1)
        assert float(module.mean.sum()) > 0

    def test_mapping_proxy_and_views_asked_for():
        d = {"x": 1}
        proxy = types.MappingProxyType(d)
        d["x"] = 2
        a = np.zeros(3, dtype=np.float32)
        t = torch.from_numpy(a)
        a[:] = 1.0
        v = a[1:]
        a[2] = 5
        assert proxy["x"] == 2 and float(t.sum()) == 7.0 and v[1] == 5

    def test_solver_final_result():
        x = mylib.solve(lambda x: sum(v * v for v in x), [1.0, 2.0])
        results = [x]
        assert len(results) == 1

    def test_dict_copied_before_kept():
        store = mylib.Store()
        state = {"a": 1}
        kept = []
        for i in range(3):
            state["a"] = i
            kept.append(dict(state))
            store.snapshot(state)
        assert [k["a"] for k in kept] == [0, 1, 2]

    def test_serialised_or_copied_at_the_call(tmp_path):
        state = {"a": [1]}
        payload = json.dumps(state)
        state["a"].append(2)
        blob = pickle.dumps(state)
        state["a"].append(3)
        weights = torch.zeros(2)
        torch.save({"w": weights}, tmp_path / "w.pt")
        weights.add_(1)
        clone = weights.clone()
        weights.add_(1)
        assert payload and blob and float(clone.sum()) == 2.0

    def test_immutable_values():
        seen = []
        for i in range(3):
            seen.append((i, "x", frozenset({i})))
        assert len(seen) == 3

    def test_parameters_for_an_optimizer():
        model = torch.nn.Linear(3, 1)
        params = list(model.parameters())
        opt = torch.optim.SGD(params, lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(2, 3)).sum().backward()
            opt.step()
        with torch.no_grad():
            for p in params:
                p.mul_(0.5)
        assert len(params) == 2

    def test_same_config_kept_several_times_unchanged():
        cfg = {"lr": 0.1}
        runs = []
        for _ in range(3):
            runs.append(cfg)
        assert runs[0] is runs[2]
"""


def test_precision(pytester: pytest.Pytester, lib: None) -> None:
    result = run(pytester, PRECISION)
    assert flagged(result) == set(), result.stdout.str()[-3000:]
    assert len(outcomes(result)) == 12


# -- what the marked code answers itself, without calling the runtime -------------------


FAST_PATHS = """
    import random
    import mylib

    def rows_one(n):
        row = {"i": 0}
        for i in range(n):
            mylib.fill(row, i)
            yield row

    def rows_fresh(n):
        for i in range(n):
            row = {"i": 0}
            mylib.fill(row, i)
            yield row

    def test_counts_kept_live():
        counter, snaps = mylib.Counter(), {}
        for i in range(3):
            counter.step()
            snaps[i] = counter.current()
        assert len(snaps) == 3

    def test_counts_kept_as_a_list():
        counter, snaps = mylib.Counter(), {}
        for i in range(3):
            counter.step()
            snaps[i] = list(counter.current())
        assert snaps[2][0] == 3

    def test_project_generator_yields_one_row_a_library_fills():
        kept = []
        for row in rows_one(3):
            kept.append(row)
        assert len(kept) == 3

    def test_project_generator_yields_fresh_rows():
        kept = []
        for row in rows_fresh(3):
            kept.append(row)
        assert [r["i"] for r in kept] == [0, 1, 2]

    def test_words_of_a_line_shuffled():
        line = " ".join(str(i) for i in range(300))
        for _ in range(3):
            words = line.split()
            random.shuffle(words)
        assert len(words) == 300
"""


def test_fast_paths(pytester: pytest.Pytester, lib: None) -> None:
    """A dict or list of atoms the keeper alone holds, a project generator's new item, and a str
    method's result are answered in the marked code; a live list, a re-yielded row, still found."""
    result = run(pytester, FAST_PATHS)
    assert flagged(result) == {"test_counts_kept_live", "test_project_generator_yields_one_row_a_library_fills"}
    assert len(outcomes(result)) == 5
    result.stdout.fnmatch_lines(["*kept holds one live dict 3 times*"])


def _benchmark() -> Any:
    spec = importlib.util.spec_from_file_location("bench_boundary", ROOT / "benchmarks" / "bench_boundary.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROOT = Path(__file__).resolve().parent.parent


def _as_project(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """The runtime takes *path* (a module marked by the test itself) as the project's only file."""
    from aliascheck.boundary import runtime as boundary

    monkeypatch.setattr(boundary, "_project", lambda file: file == path)
    monkeypatch.setattr(boundary, "_files", {})


def test_pipeline_items_call_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The benchmark's pipeline (``benchmarks/bench_boundary.py``): no item makes the marked code call
    the runtime (a fresh list of atoms kept, a project generator's new item kept, a str method's
    result bound, an atom stored)."""
    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary

    path = str(tmp_path / "pipeline.py")
    calls: list[str] = []
    for hook in ("kept", "bound", "wrote", "before", "after"):
        real = getattr(boundary, hook)
        monkeypatch.setattr(boundary, hook, lambda *a, _real=real, _hook=hook, **k: (calls.append(_hook),
                                                                                     _real(*a, **k))[1])
    _as_project(monkeypatch, path)
    namespace: dict[str, Any] = {"__name__": "pipeline"}
    exec(rewrite.compile_marked(textwrap.dedent(_benchmark().PIPELINE), path), namespace)
    boundary.start(None)
    try:
        boundary.begin()
        chunks = list(namespace["batch"](namespace["enrich"](namespace["parse"](namespace["read"](256)))))
        assert len(chunks) == 4 and boundary.FED and boundary.SEEN
    finally:
        boundary.stop()
    assert calls == []



def test_a_container_of_the_projects_own_objects_is_not_recorded(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """``self._keys = [self]`` (tomlkit's Key, made for every key parsed), a list of the project's own
    nodes bound to an attribute, a dict of such lists and a tuple of atoms and own objects kept in a
    cache (pyparsing) hold no library's live object: nothing is recorded or fingerprinted.
    A list holding a library's object (a ``collections.OrderedDict``) is, as before."""
    import collections
    import sys
    import types

    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary

    path = str(tmp_path / "keys.py")
    _as_project(monkeypatch, path)
    source = textwrap.dedent("""
        class Key:
            def __init__(self, name):
                self.name = name
                self._keys = [self]

        class Dotted:
            def __init__(self, keys):
                self._keys = list(keys)

        class Table:
            def __init__(self, value):
                self._value = list(value)

        class Results:
            def __init__(self, named, cache):
                self._named = dict(named)  # {name: [own objects]}: a results object's index
                cache[len(cache)] = (0, self, len(named))  # a packrat cache's (loc, results, loc)
    """)
    module = types.ModuleType("keys")
    module.__file__ = path
    monkeypatch.setitem(sys.modules, "keys", module)
    namespace = vars(module)
    exec(rewrite.compile_marked(source, path), namespace)
    boundary.start(None)
    try:
        boundary.begin()
        keys = [namespace["Key"](str(i)) for i in range(20)]
        dotted = [namespace["Dotted"](keys[i:i + 2]) for i in range(10)]
        assert len(dotted) == 10 and boundary._test.records == []
        cache: dict[int, Any] = {}
        for i in range(5):
            namespace["Results"]({"k": keys[i:i + 3], "n": [i]}, cache)
        assert len(cache) == 5 and boundary._test.records == []
        shared = collections.OrderedDict(a=1)
        namespace["Table"]([shared, 1])
        assert [rec.owner_name for rec in boundary._test.records] == ["list"]
    finally:
        boundary.stop()


def test_a_history_of_one_object_is_counted_in_the_keepers_hands(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """The same dict kept again at one line after its tracker wrote it (a slot holding the latest, and a
    history): the keeper the statement holds is counted, never looked for among the value's referrers
    (a heap scan per keep). The slot stays clean with no scan; the history is still found (its report
    reads where the value sits, once)."""
    import sys
    import types

    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary

    path = str(tmp_path / "loop.py")
    _as_project(monkeypatch, path)
    scans: list[int] = []
    real = boundary._ById.find
    monkeypatch.setattr(boundary._ById, "find", lambda self, value: (scans.append(1), real(self, value))[1])
    source = textwrap.dedent("""
        class Tracker:
            def __init__(self):
                self.metrics = {"step": 0}

            def update(self):
                self.metrics["step"] += 1
                return self.metrics

        def latest(n):
            t, state = Tracker(), {}
            for _ in range(n):
                state["m"] = t.update()

        def history(n):
            t, out = Tracker(), []
            for _ in range(n):
                out.append(t.update())
    """)
    module = types.ModuleType("loop")
    module.__file__ = path
    monkeypatch.setitem(sys.modules, "loop", module)
    exec(rewrite.compile_marked(source, path), vars(module))
    boundary.start(None)
    try:
        boundary.begin()
        module.latest(20)
        assert boundary._test.pending == [] and scans == []
        module.history(5)
        assert [check for _, _, check, _ in boundary._test.pending] == ["kept again"]
    finally:
        boundary.stop()

# -- what the rewriting must not change -------------------------------------------------


def test_marked_code_raises_and_reports_as_before(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(helper='''
        import inspect

        def keep(rows, value):
            rows.append(value)
            rows[0] = value
            raise ValueError("boom " + str(len(rows)))

        def source():
            return inspect.getsource(keep)
    ''')
    pytester.makepyfile(test_user='''
        import traceback
        import helper

        def test_raises():
            rows = []
            try:
                helper.keep(rows, [1])
            except ValueError as exc:
                frames = traceback.extract_tb(exc.__traceback__)
                print("LINES", [(f.name, f.lineno, f.line) for f in frames])
                print("SOURCE", repr(helper.source()))
                print("MARKED", "@aliascheck" in helper.keep.__code__.co_names)
                print("NAMES", sorted(n for n in vars(helper) if "aliascheck" in n))
                raise
    ''')
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    checked = pytester.runpytest_subprocess("--aliascheck", "-p", "no:cacheprovider", "-s")
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")  # no marked bytecode left behind

    def line(result: pytest.RunResult, tag: str) -> str:  # -s: a print may follow pytest's progress text
        return next(x[x.index(tag):] for x in result.outlines if tag in x)

    for result in (plain, checked, again):
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*ValueError: boom 1"])
    assert line(plain, "LINES") == line(checked, "LINES") == line(again, "LINES")
    assert "('keep', 6, 'raise ValueError(\"boom \" + str(len(rows)))')" in line(checked, "LINES")
    assert line(plain, "SOURCE") == line(checked, "SOURCE")
    assert line(plain, "MARKED") == line(again, "MARKED") == "MARKED False"
    assert line(checked, "MARKED") == "MARKED True"
    assert line(plain, "NAMES") == line(checked, "NAMES") == "NAMES []"  # the module's namespace is its own


def test_boundary_off_marks_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user='''
        import torch

        def test_hook():
            model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(inplace=True))
            acts = []
            model[0].register_forward_hook(lambda m, i, o: acts.append(o))
            model(torch.randn(1, 2)); model(torch.randn(1, 2))
            assert "__aliascheck_boundary__" not in globals()
    ''')
    pytester.runpytest_subprocess("--aliascheck", "--aliascheck-boundary", "off", "-p",
                                  "no:cacheprovider").assert_outcomes(passed=1)
    pytester.runpytest_subprocess("--aliascheck", "--aliascheck-boundary", "sideways", "-p",
                                  "no:cacheprovider").stderr.fnmatch_lines(["*invalid choice*"])


def test_what_cannot_be_fingerprinted_is_no_crash(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user='''
        import threading

        class Job:
            def __init__(self):
                self.lock = threading.Lock()
                self.done = []

        SHARED = Job()

        def test_keeps_unpicklable_parts():
            kept = []
            for i in range(3):
                kept.append(SHARED.__dict__)
                SHARED.done.append(i)
            gen = (i for i in range(3))
            box = {"gen": gen, "lock": threading.Lock()}
            also = []
            also.append(box)
            assert len(kept) == 3
    ''')
    result = pytester.runpytest_subprocess("--aliascheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


# -- items holding new tensors: nothing of them is live ------------------------------

LOADER = '''
import torch


def items(n, reuse):
    item = {"step": 0, "t": torch.zeros(1)}  # the buggy loader's one item, refilled each time
    for i in range(n):
        if reuse:
            item["step"] = i
            item["t"].fill_(float(i))
            yield item
        else:
            yield {"step": i, "t": torch.tensor([float(i)])}
'''

NEW_TENSORS = """
    import loader

    def test_items_the_loader_refills():
        kept = []
        for item in loader.items(3, reuse=True):
            kept.append(item)
        assert len(kept) == 3

    def test_items_with_new_tensors_kept_one_by_one():
        kept = []
        for item in loader.items(3, reuse=False):
            kept.append(item)
        assert [float(item["t"]) for item in kept] == [0.0, 1.0, 2.0]

    def test_an_epoch_of_items_with_new_tensors_bound_twice():
        for _ in range(2):
            epoch = list(loader.items(3000, reuse=False))
        assert float(epoch[-1]["t"]) == 2999.0
"""


def test_items_holding_new_tensors_are_clean_and_one_refilled_item_is_not(
        pytester: pytest.Pytester, lib: None) -> None:
    (Path(str(pytester.path)) / "env" / "lib" / "site-packages" / "loader.py").write_text(LOADER)
    result = run(pytester, NEW_TENSORS)
    assert outcomes(result) == {"test_items_the_loader_refills": "FAILED",
                                "test_items_with_new_tensors_kept_one_by_one": "PASSED",
                                "test_an_epoch_of_items_with_new_tensors_bound_twice": "PASSED"}


def test_a_kept_item_holding_only_new_tensors_is_new_all_the_way_down() -> None:
    """So a keep of it is not recorded: no fingerprint per item, however many items a list holds
    (a test's ``list(loader)``); an item whose tensor the library still refers to is recorded."""
    from aliascheck.boundary import runtime as boundary

    assert boundary._fresh({"step": 1, "t": torch.tensor([1.0])})
    assert boundary._fresh([{"step": i, "t": torch.tensor([float(i)])} for i in range(15_000)])
    held = torch.zeros(1)
    assert not boundary._fresh({"step": 1, "t": held})
    assert not boundary._fresh({"step": 1, "t": held[:]})


def _atoms_of(source: str) -> frozenset[str]:
    from aliascheck.boundary import rewrite

    tree = ast.parse(textwrap.dedent(source))
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    return rewrite.atom_names(func, frozenset(rewrite.bound_names(tree.body)))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.source.splitlines()[-1].strip())
def test_each_statement_shape_inserts_what_the_table_says(shape: Any) -> None:
    """The rewriter's table of shapes (README "What is marked") is what it does: the example marked
    calls exactly the runtime names listed (the gates' questions and ``try`` aside), and the example
    unmarked calls none. A shape whose marking changed fails here until the table says so."""
    from aliascheck.boundary import rewrite

    questions = {"GATE", "WATCHING", "BUFFER", "BUFFER_OR_WATCHED", "BIND", "PASSES", "PENDED", "UNPEND", "SELF",
                 "RETURNING", "REFILLED", "Exception", "NameError", "BaseException", "register", "_on"}

    def runtime_names(tree: ast.AST) -> set[str]:
        return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == rewrite.RUNTIME}

    assert not runtime_names(ast.parse(shape.source))
    marked = rewrite.mark(ast.parse(shape.source), base=0)
    assert runtime_names(marked) - questions == set(shape.inserts)
    assert shape.reports


def test_atom_names_are_those_every_binding_makes_an_atom() -> None:
    """A name is told an atom from the source only when each of its bindings makes one: its keeps
    then cost a set's truth alone; one other binding anywhere (a later line, a loop's next turn, a
    walrus in a comprehension, a nested scope's nonlocal) and it is looked at as before."""
    assert _atoms_of('''
        def f(words, lib):
            n = len(words)
            total, label = 0, f"n={n}"
            for i in range(n):
                total += i * 2
            for position, word in enumerate(words):
                pass
            flag = not words
            x = 0
            for _ in range(3):
                x = lib.item()
            y = 0
            [(y := w) for w in words]
            z = 0
            def inner():
                nonlocal z
                z = lib
            return x, y, z
    ''') == {"n", "total", "label", "i", "position", "flag", "_"}
    # A builtin the module or the function rebinds makes nothing known.
    assert _atoms_of('''
        len = lambda x: [x]
        def f(words):
            n = len(words)
            for i in range(3):
                pass
            return n
    ''') == {"i"}
    assert _atoms_of('''
        def f(words):
            range = lambda n: [[]] * n
            for i in range(3):
                pass
            return i
    ''') == frozenset()
    assert _atoms_of('''
        from helpers import *
        def f():
            i = 0
            return i
    ''') == frozenset()


def test_a_name_bound_to_an_atom_once_and_a_live_object_later_is_still_looked_at(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The index loop (an int kept per word) calls the runtime for nothing; the same keep of a name
    that a later line rebinds to a library's object calls kept for that object."""
    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary

    path = str(tmp_path / "atoms.py")
    calls: list[Any] = []
    real = boundary.kept
    monkeypatch.setattr(boundary, "kept", lambda *a, **k: (calls.append(a[1]), real(*a, **k))[1])
    _as_project(monkeypatch, path)
    namespace: dict[str, Any] = {"__name__": "atoms"}
    exec(rewrite.compile_marked(textwrap.dedent('''
        def build_index(words):
            index = {}
            for position, word in enumerate(words):
                entry = index.get(word)
                if entry is None:
                    entry = []
                    index[word] = entry
                entry.append(position)
            return index

        def keep_all(items):
            out = []
            for item in items:
                x = 0
                x = item
                out.append(x)
            return out
    '''), path), namespace)
    boundary.start(None)
    try:
        boundary.begin()
        assert namespace["build_index"](["a", "b", "a"]) == {"a": [0, 2], "b": [1]}
        assert calls == []
        live = [bytearray(b"x")]
        namespace["keep_all"](live)
        assert any(c is live[0] for c in calls)
    finally:
        boundary.stop()


def test_a_dead_copys_parts_cost_one_look_each(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A shallow copy's shared parts are known by id; once the copy and its source died, a new object
    at one of those ids is looked up once (the heap scan finds no copy above it) and forgotten, not
    at every write into it: a linked ring built after 20 dropped copies took 2,260 heap scans."""
    import gc

    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary

    path = str(tmp_path / "copies.py")
    _as_project(monkeypatch, path)
    namespace: dict[str, Any] = {"__name__": "copies"}
    exec(rewrite.compile_marked(textwrap.dedent('''
        def copy_of(d):
            x = d.copy()
            return len(x)

        def build_ring(n):
            root = []
            root[:] = [root, root, None, None]
            for key in range(n):
                last = root[0]
                link = [last, root, key, [key]]
                last[1] = link
                root[0] = link
            root[:] = []
    '''), path), namespace)
    scans: list[int] = []
    real = gc.get_referrers
    boundary.start(None)
    try:
        boundary.begin()
        for _ in range(20):
            namespace["copy_of"]({"a": [1], "b": [2]})
        stale = len(boundary._test.shared)
        assert stale > 0
        monkeypatch.setattr(gc, "get_referrers", lambda *a: (scans.append(1), real(*a))[1])
        for _ in range(20):
            namespace["build_ring"](50)
    finally:
        boundary.stop()
    assert len(scans) <= 4 * stale, (len(scans), stale)


def _marked_calls(source: str) -> dict[str, list[str]]:
    """function name -> the runtime calls its marked body makes (in order of the text)."""
    import re

    from aliascheck.boundary import rewrite

    tree = rewrite.mark(ast.parse(textwrap.dedent(source)), base=1)
    return {f.name: re.findall(r"@aliascheck\.(kept|wrote)\(", ast.unparse(f))
            for f in tree.body if isinstance(f, ast.FunctionDef)}


def test_a_container_the_function_made_and_kept_in_is_not_looked_at_until_it_is_let_out() -> None:
    """Writes into a list the function itself made and has not let out (stored, passed, returned,
    held by a closure) cannot be writes into anything recorded: no test for them in the marked code
    (the matrix product's inner ``row[j] += ...``). Once it is let out, each write is looked at."""
    calls = _marked_calls('''
        def private(xs):
            row = [0.0] * len(xs)
            for j in range(len(xs)):
                row[j] += 1.0
            row.sort()
            return row

        def let_out_first(xs, sink):
            row = [0.0] * len(xs)
            sink.append(row)
            for j in range(len(xs)):
                row[j] += 1.0
            return row

        def passed(n, use):
            row = []
            use(row)
            row.extend([1])
            return row

        def closure(n):
            row = []
            add = lambda v: row.append(v)
            row.extend([n])
            return add

        def rebound(n, lib):
            row = []
            row = lib.buffer()
            row.extend([n])
            return row

        def made_in_a_branch(flag, lib):
            row = lib.buffer()
            if flag:
                row = []
            row.extend([1])
            return row

        def frame(n):
            row = []
            names = locals()
            row.extend([n])
            return names

        def made_in_the_other_branch(flag, lib):
            row = lib.buffer()
            if flag:
                row = []
            else:
                row.clear()
            return row
    ''')
    assert calls["private"] == []
    # ``[0.0] * n`` of a parameter is not known to be a new list (``n.__rmul__`` may answer).
    assert _marked_calls("def f(n):\n    row = [0.0] * n\n    row.sort()\n")["f"] == ["wrote"]
    assert calls["let_out_first"] == ["kept", "wrote"]
    # A branch that makes a new list says nothing of the other branch's (``else: rows.clear()``).
    for name in ("passed", "closure", "rebound", "made_in_a_branch", "frame", "made_in_the_other_branch"):
        assert calls[name] == ["wrote"], name


def _marked_text(source: str) -> dict[str, str]:
    from aliascheck.boundary import rewrite

    tree = rewrite.mark(ast.parse(textwrap.dedent(source)), base=1)
    return {f.name: ast.unparse(f) for f in tree.body if isinstance(f, ast.FunctionDef)}


def test_what_a_hot_loop_asks_nothing_about() -> None:
    """A BFS's own bookkeeping: arithmetic with a number literal is a new number (or array), never
    anyone's live state; a deque, dict or list the function made (``collections``' names imported
    as such, builtins not rebound) is private; an item taken back out of a private container was
    looked at as it went in. Each has a twin that is still asked about."""
    bfs = _marked_text(_benchmark().BFS)["bfs"]  # the benchmark's own BFS
    shared = _marked_text('''
        def shared(seen, node, nxt, queue):
            seen[nxt] = seen[node] + 1
            seen[node] = seen[nxt] * 2
            node = queue.popleft()
            return node
    ''')["shared"]
    assert "bound(node" not in bfs and "seen[nxt] = seen[node] + 1\n" in bfs  # no temporary, no call
    assert "GATE(nxt, queue, False" in bfs and "GATE(node, order, False)" in bfs  # values still asked about
    assert "WATCHING(seen)" in shared  # a write into a parameter's dict: a write into something recorded?
    assert "GATE(@ac" in shared  # ``* 2`` may repeat a sequence's items: still asked about
    assert "bound(node" in shared  # a parameter's deque: its items are someone else's
    rebound = _marked_text('''
        from collections import deque

        def f(lib):
            queue = deque()
            queue.extend(lib.items())
            return queue

        if True:
            deque = list
    ''')["f"]
    assert "wrote(queue" in rebound  # the module binds deque otherwise too: not known to be new
    local = _marked_text('''
        from collections import deque

        def f(lib):
            deque = lib.deque
            queue = deque()
            queue.extend(lib.items())
            return queue
    ''')["f"]
    assert "wrote(queue" in local  # the function binds deque itself: not known to be new


# -- who wrote it, for whom: the project's own generator ---------------------------------


PROJECT_GENERATOR = """
    import numpy as np

    def frames(n):
        buf = np.zeros(4)  # one block buffer, refilled and yielded again (acoular's result())
        for i in range(n):
            buf[:] = i
            yield buf

    def frames_copied(n):
        buf = np.zeros(4)
        for i in range(n):
            buf[:] = i
            yield buf.copy()

    def rows(n):
        row = {"i": 0}
        for i in range(n):
            row["i"] = i
            yield row

    def fresh_rows(n):
        for i in range(n):
            row = {"i": i, "tags": []}
            yield row

    CONFIG = {"rate": 2, "tags": ["a"]}

    def with_config(n):
        for _ in range(n):
            yield CONFIG  # the same object each time, never written: a handle, not a history

    def test_reused_block_collected():
        blocks = []
        for block in frames(4):
            blocks.append(block)
        assert len(blocks) == 4

    def test_reused_dict_collected():
        out = []
        for row in rows(3):
            out.append(row)
        assert len(out) == 3

    def test_copied_blocks_collected():
        blocks = []
        for block in frames_copied(4):
            blocks.append(block)
        assert [b[0] for b in blocks] == [0, 1, 2, 3]

    def test_fresh_rows_collected():
        out = []
        for row in fresh_rows(3):
            out.append(row)
        assert [r["i"] for r in out] == [0, 1, 2]

    def test_same_unchanged_object_collected():
        out = []
        for cfg in with_config(3):
            out.append(cfg)
        assert out[0] is out[2]

    def test_the_keeper_writes_what_it_kept():
        out = []
        for row in fresh_rows(3):
            out.append(row)
            row["tags"].append("seen")  # the consumer's own write into its own item
        assert out[2]["tags"] == ["seen"]

    def test_reused_block_listed():
        assert len(list(frames(3))) == 3  # list() is the keeper: library code

    def test_reused_block_in_a_comprehension():
        assert len([b for b in frames(3)]) == 3

    def test_reused_block_zipped():
        assert len(list(zip(range(3), frames(3)))) == 3

    def test_copied_blocks_listed():
        assert [b[0] for b in [b.copy() for b in frames(3)]] == [0, 1, 2]

    def test_reused_block_summed_in_a_loop():
        total = 0.0
        for b in frames(5):  # the loop variable holds the last block until the next: no keeper
            total += b[0]
        assert total == 10.0

    def test_two_blocks_unpacked():
        a, b = frames(2)  # two items: the second yield cannot tell a keeper from the unpacking
        assert a is b
"""


def test_a_project_generators_reused_buffer_is_a_change_for_its_keeper(pytester: pytest.Pytester) -> None:
    """Rule *who wrote it, for whom*: the generator's refill of the buffer it yielded is its own intent,
    but the consumer holds that buffer at the state it was yielded in: for the consumer it is a change
    (acoular/acoular#128: every collected block is the last), whether the consumer is the project's
    loop or library code (``list()``, a comprehension, ``zip``). A generator that yields copies or
    new objects, one that yields the same object and never writes it, a consumer writing into its
    own items and a loop that only reads each block stay clean."""
    result = run(pytester, PROJECT_GENERATOR)
    assert flagged(result) == {"test_reused_block_collected", "test_reused_dict_collected", "test_reused_block_listed",
                               "test_reused_block_in_a_comprehension", "test_reused_block_zipped"}
    result.stdout.fnmatch_lines([
        "*blocks holds one live ndarray 4 times (handed out by frames(4), yielded), changed after it was kept*"])
    result.stdout.fnmatch_lines(["*out holds one live dict 3 times (handed out by rows(3), yielded)*"])
    result.stdout.fnmatch_lines([
        "*a list holds one live ndarray 2 times (yielded by frames()), changed after it was kept: [[]*[]]: refilled by "
        "frames() after it was yielded, then yielded again*",
        "*yield a copy: yield buf.copy()*"], consecutive=False)


PROJECT_GENERATOR_VIEWS = """
    import numpy as np
    import torch

    def frames(n):
        buf = np.zeros((2, 4))  # one block buffer, refilled and yielded again
        for i in range(n):
            buf[:] = i
            yield buf

    def test_views_in_a_comprehension():
        firsts = [f[0] for f in frames(3)]  # views of one memory: every one shows the last block
        assert len(firsts) == 3

    def test_tensors_over_each_item():
        batch = [torch.from_numpy(f) for f in frames(3)]  # no copy: the tensors share the buffer
        assert len(batch) == 3

    def test_views_mapped():
        flat = list(map(np.ravel, frames(3)))
        assert len(flat) == 3

    def test_view_copies_in_a_comprehension():
        firsts = [f[0].copy() for f in frames(3)]
        assert [row[0] for row in firsts] == [0, 1, 2]

    def test_values_in_a_comprehension():
        sums = [f.sum() for f in frames(3)]
        assert sums == [0, 8, 16]

    def test_rows_of_each_block():
        for f in frames(3):
            rows = [r for r in f]  # the rows of one block: distinct memory, not one memory twice
            assert len(rows) == 2
"""


def test_views_of_a_refilled_buffer_are_that_buffer_at_each_place(pytester: pytest.Pytester) -> None:
    """Memory is the identity: a list bound from a comprehension or a library call holding views of a
    buffer the project's generator refills (``f[0]``, ``torch.from_numpy(f)``, ``np.ravel``) holds one
    memory at several places, each showing the last block. Copies, values computed from each item and
    the distinct rows of one block stay clean."""
    result = run(pytester, PROJECT_GENERATOR_VIEWS)
    assert flagged(result) == {"test_views_in_a_comprehension", "test_tensors_over_each_item", "test_views_mapped"}
    result.stdout.fnmatch_lines(["*a list holds one live * 3 times (yielded by frames()), changed after it was kept*",
                                 "*yield a copy: yield buf.copy()*"], consecutive=False)


PROJECT_RETURNS = """
    import numpy as np

    class Env:
        def __init__(self):
            self.obs, self.t = np.zeros(3), 0

        def step(self, action):  # one observation buffer, refilled at each step (dm_control#34)
            self.t += 1
            self.obs[:] = self.t
            return self.obs, float(self.t), self.t >= 4

        def step_copied(self, action):
            self.t += 1
            self.obs[:] = self.t
            return self.obs.copy(), float(self.t), self.t >= 4

    class Frames:
        def __init__(self):
            self.buf = np.zeros(2)

        def __getitem__(self, i):
            buf = self.buf
            buf[:] = i
            return buf

    class Decoded:  # a copy only when asked for: the branch taken is the one told
        def __init__(self, copy):
            self.buf, self.copy = np.zeros(2), copy

        def __getitem__(self, i):
            self.buf[:] = i
            return self.buf.copy() if self.copy else self.buf

    TABLE = np.arange(4.0)

    def table():
        return TABLE  # the same array each time, never written: a handle, not a history

    def test_rollout_keeps_live_observations():
        env, history, done = Env(), [], False
        while not done:
            obs, reward, done = env.step(0)
            history.append(obs)
        assert len(history) == 4

    def test_dataset_items_in_a_comprehension():
        ds = Frames()
        items = [ds[i] for i in range(4)]
        assert len(items) == 4

    def test_rollout_of_copies():
        env, history, done = Env(), [], False
        while not done:
            obs, reward, done = env.step_copied(0)
            history.append(obs)
        assert [o[0] for o in history] == [1.0, 2.0, 3.0, 4.0]

    def test_rollout_copied_by_the_consumer():
        env, history, done = Env(), [], False
        while not done:
            obs, reward, done = env.step(0)
            history.append(obs.copy())
        assert [o[0] for o in history] == [1.0, 2.0, 3.0, 4.0]

    def test_dataset_items_used_one_at_a_time():
        ds, total = Frames(), 0.0
        for i in range(4):
            total += float(ds[i].sum())
        assert total == 12.0

    def test_latest_observation_in_one_slot():
        env, latest, done = Env(), {}, False
        while not done:
            latest["obs"], reward, done = env.step(0)
        assert latest["obs"][0] == 4.0

    def test_a_table_returned_again_and_kept():
        kept = [table() for _ in range(4)]
        assert all(k is TABLE for k in kept)

    def test_items_returned_on_one_branch_of_a_condition():
        ds = Decoded(copy=False)
        assert len([ds[i] for i in range(4)]) == 4

    def test_items_copied_on_the_branch_taken():
        ds = Decoded(copy=True)
        assert [float(x[0]) for x in [ds[i] for i in range(4)]] == [0.0, 1.0, 2.0, 3.0]
"""


def test_a_project_functions_reused_buffer_is_a_change_for_its_keeper(pytester: pytest.Pytester) -> None:
    """The generator's rule for a plain function that returns one buffer it refills (an environment's
    ``step``, a dataset's ``__getitem__``; dm_control#34 "returned observations will be mutated when the
    environment steps"): a collection holding the buffer twice when it is refilled and returned again
    is flagged at the return, on whichever branch of ``a if c else b`` it is returned. Copies (by the
    function, on the branch taken, or by the consumer), one item used at a time, one slot holding the
    latest, and an array returned again but never written stay clean."""
    result = run(pytester, PROJECT_RETURNS)
    assert flagged(result) == {"test_rollout_keeps_live_observations", "test_dataset_items_in_a_comprehension",
                               "test_items_returned_on_one_branch_of_a_condition"}
    assert len(outcomes(result)) == 9
    result.stdout.fnmatch_lines([
        "*a list holds one live ndarray 2 times (returned by step()), changed after it was kept: [[]*[]]: refilled "
        "by step() after it was returned, then returned again*",
        "*return a copy: return self.obs.copy()*"], consecutive=False)
    result.stdout.fnmatch_lines(["*return a copy: return buf.copy()*"])



PROJECT_HISTORY = """
    import io

    class Tracker:
        def __init__(self):
            self.metrics = {"loss": 0.0, "step": 0}

        def update(self, loss):  # one dict, written at every step and handed out
            self.metrics["loss"] = loss
            self.metrics["step"] += 1
            return self.metrics

        def current(self):
            return self.metrics

    def describe(config):
        return ", ".join(f"{k}={v}" for k, v in config.items())

    def record(i):
        return {"id": i, "status": "new"}

    def test_history_of_the_trackers_one_dict():
        t, history = Tracker(), []
        for i in range(4):
            history.append(t.update(1.0 / (i + 1)))

    def test_metrics_by_step_in_a_dict():
        t, by_step = Tracker(), {}
        for i in range(4):
            by_step[i] = t.update(1.0 / (i + 1))

    def test_history_of_copies():
        t, history = Tracker(), []
        for i in range(4):
            history.append(dict(t.update(1.0 / (i + 1))))
        assert [h["step"] for h in history] == [1, 2, 3, 4]

    def test_the_same_dict_kept_again_unchanged():
        t, seen = Tracker(), []
        t.update(0.5)
        for _ in range(3):
            seen.append(t.current())

    def test_a_stack_holding_it_once_at_a_time():
        t, stack = Tracker(), []
        for i in range(4):
            stack.append(t.update(1.0 / (i + 1)))
            assert stack.pop()["step"] == i + 1

    def neighbours(graph, node):
        return graph[node["name"]]

    def take(stack):
        return stack.pop()

    def test_a_tour_coming_back_to_a_node_it_wrote():
        nodes = {n: {"name": n, "seen": 0} for n in "abc"}
        graph = {"a": [nodes["b"], nodes["c"]], "b": [nodes["a"]], "c": [nodes["a"]]}
        tour, stack = [], [nodes["a"]]
        while stack:
            node = take(stack)
            node["seen"] += 1
            tour.append(node)
            if node["seen"] == 1:
                stack.extend(neighbours(graph, node))
        assert [n["name"] for n in tour] == ["a", "c", "a", "b", "a"]

    def test_running_totals_kept_at_each_turn():
        totals = {"loss": 0.0, "seen": []}
        history = []
        for i in range(3):
            totals["loss"] += i
            totals["seen"].append(i)
            history.append(totals)

    def test_rows_of_one_row():
        row, grid = [0, 0, 0], []
        for i in range(3):
            row[i] = 1
            grid.append(row)

    def test_running_totals_copied_at_each_turn():
        totals = {"loss": 0.0}
        history = []
        for i in range(3):
            totals["loss"] += i
            history.append(dict(totals))
        assert [h["loss"] for h in history] == [0.0, 1.0, 3.0]

    def test_running_totals_in_one_slot():
        totals, latest = {"loss": 0.0}, {}
        for i in range(3):
            totals["loss"] += i
            latest["totals"] = totals
        assert latest["totals"]["loss"] == 3.0

    def test_one_record_refilled_and_flushed_at_each_turn():
        rec, batch, sums = {}, [], []
        for i in range(3):
            rec["i"] = i
            batch.append(rec)
            sums.append(sum(r["i"] for r in batch))
            batch.clear()
        assert sums == [0, 1, 2]

    def test_a_group_kept_then_a_new_one_begun():
        groups, current = [], []
        for x in [1, 2, 0, 3, 0]:
            if x == 0:
                groups.append(current)
                current = []
            else:
                current.append(x)
        assert groups == [[1, 2], [3]]

    def test_each_member_keyed_to_its_one_growing_group():
        owner, group = {}, []
        for x in (1, 2, 3):
            group.append(x)
            owner[x] = group
        assert owner[1] is owner[3] and owner[1] == [1, 2, 3]

    def test_a_row_a_nested_function_binds_anew():
        row, rows = {}, []

        def fresh():
            nonlocal row
            row = {}

        for i in range(3):
            fresh()  # the source shows no binding in the loop: the new object at the keep does
            row["i"] = i
            rows.append(row)
        assert [r["i"] for r in rows] == [0, 1, 2]

    def test_one_record_in_two_indexes_updated_through_either():
        by_id, items = {}, []
        for i in range(3):
            rec = record(i)
            by_id[i] = rec
            items.append(rec)
        by_id[1]["status"] = "done"
        items[2]["status"] = "done"
        assert [r["status"] for r in items] == ["new", "done", "done"]

    def test_one_buffer_a_library_fills_kept_at_each_turn():
        stream, buf, chunks = io.BytesIO(b"abcdefgh"), bytearray(4), []
        while stream.readinto(buf) == 4:  # the library refills the one buffer
            chunks.append(buf)
        assert len(chunks) == 2

    def test_the_bytes_a_library_filled_kept_at_each_turn():
        stream, buf, chunks = io.BytesIO(b"abcdefgh"), bytearray(4), []
        while stream.readinto(buf) == 4:
            chunks.append(bytes(buf))
        assert chunks == [b"abcd", b"efgh"]

    def test_one_config_passed_and_kept_unchanged_at_each_turn():
        config, runs = {"lr": 0.1}, []
        for _ in range(3):
            describe(config)  # reads it only
            runs.append(config)
        assert all(r is config for r in runs)
"""



def test_a_view_bound_by_either_branch_of_a_conditional(pytester: pytest.Pytester) -> None:
    """``w0 = t.numpy() if cpu else t.cpu().numpy()`` binds the view whichever branch ran (read from the
    name after the statement, as for a call); a copy in the branch that ran stays clean."""
    result = run(pytester, """
        import numpy as np
        import torch

        def train(model):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(3):
                opt.zero_grad()
                model(torch.ones(2, 4)).sum().backward()
                opt.step()

        def test_baseline_view_either_branch():
            model = torch.nn.Linear(4, 1)
            w0 = model.weight.detach().numpy() if model.weight.device.type == "cpu" else model.weight.cpu().numpy()
            train(model)
            assert w0.shape == (1, 4)  # read after the training: a view the test never read again is clean

        def test_baseline_copy_either_branch():
            model = torch.nn.Linear(4, 1)
            w0 = model.weight.detach().numpy().copy() if model.weight.device.type == "cpu" else None
            train(model)
            assert np.abs(model.weight.detach().numpy() - w0).max() > 0
    """)
    assert flagged(result) == {"test_baseline_view_either_branch"}
    result.stdout.fnmatch_lines(["*w0 holds a live ndarray (handed out by model.weight.detach().numpy() if *"])

def test_one_object_kept_again_at_one_line_is_a_history_whoever_wrote_it(pytester: pytest.Pytester) -> None:
    """Rule *who wrote it, for whom*, for a history of one object: a line that keeps the very object
    again while its keeper still holds it from before (``history.append(tracker.update(...))``, the
    tracker writing its one dict in between) shows the last state in every entry, though the project
    wrote it; so does a loop that writes its own dict or list and keeps it at each turn (``history.append(
    totals)``, a grid of one row), or passes it to a call that fills it (``stream.readinto(buf)``).
    Copies, one slot holding the latest, a batch flushed at each turn, a
    group kept before a new one is begun, each member keyed to its one growing group (an index, not a
    history: a dict keeper's value counts only when written over), the same object kept again
    unchanged, a stack holding it
    once at a time, a tour coming back to a node it wrote (a, c, a, b, a: not the line's last keep
    again) and a record kept once in each of two indexes and updated through either stay clean."""
    result = run(pytester, PROJECT_HISTORY)
    assert flagged(result) == {"test_history_of_the_trackers_one_dict", "test_metrics_by_step_in_a_dict",
                               "test_running_totals_kept_at_each_turn", "test_rows_of_one_row",
                               "test_one_buffer_a_library_fills_kept_at_each_turn"}
    assert len(outcomes(result)) == 18
    result.stdout.fnmatch_lines([
        "*history holds one live dict 4 times (handed out by t.update(1.0 / (i + 1))), changed after it was "
        "kept: history[[]0[]][[]'loss'[]]: 1.0 -> 0.5*",
        "*seen by:  the same line keeping the very object again, while the keeper still holds it from before*",
        "*history holds one live dict 3 times (written by the code that keeps it), changed after it was kept*",
        "*fix:*keep a copy: history.append(copy.deepcopy(totals))",
        "*grid holds one live list 3 times (written by the code that keeps it)*"],
        consecutive=False)

PROJECT_ATTRIBUTE_KEPT = """
    class Batcher:  # StackOverflow 55897375: container.append(lst); lst.clear() empties the container's entry
        def __init__(self, sink, size=2, copy=False, fresh=False):
            self.sink, self.size, self.copy, self.fresh = sink, size, copy, fresh
            self.pending = []

        def log(self, line):
            self.pending.append(line)
            if len(self.pending) >= self.size:
                self.flush()

        def flush(self):
            self.sink.append(self.pending)
            self.pending.clear()

    class CopyingBatcher(Batcher):
        def flush(self):
            self.sink.append(list(self.pending))
            self.pending.clear()

    class FreshBatcher(Batcher):
        def flush(self):
            self.sink.append(self.pending)
            self.pending = []

    class Window:
        def __init__(self):
            self.window, self.history, self.views = [], [], []
            self.views.append(self.window)  # one live view of the window, registered once: a handle

        def step(self, x):
            self.window.append(x)
            del self.window[:-2]
            self.history.append(self.window)

    class TupleWindow(Window):
        def step(self, x):
            self.window.append(x)
            del self.window[:-2]
            self.history.append(tuple(self.window))

    def test_pending_list_appended_then_cleared():
        b = Batcher([])
        for i in range(6):
            b.log(i)
        assert len(b.sink) == 3

    def test_pending_list_copied_then_cleared():
        b = CopyingBatcher([])
        for i in range(6):
            b.log(i)
        assert b.sink == [[0, 1], [2, 3], [4, 5]]

    def test_pending_list_appended_then_replaced():
        b = FreshBatcher([])
        for i in range(6):
            b.log(i)
        assert b.sink == [[0, 1], [2, 3], [4, 5]]

    def test_window_appended_at_each_step():
        w = Window()
        for i in range(4):
            w.step(i)

    def test_window_kept_as_tuples():
        w = TupleWindow()
        for i in range(4):
            w.step(i)
        assert w.history[-1] == (2, 3) and w.views == [[2, 3]]
"""


def test_an_attribute_appended_and_written_by_the_same_function_is_a_history(pytester: pytest.Pytester) -> None:
    """Rule *who wrote it, for whom*, for a part of the project's own object: a function that appends its
    own attribute (``self.sink.append(self.pending)``) and writes that attribute in place without binding
    it again (``self.pending.clear()``, a sliding window trimmed) keeps one object at every place. A copy
    appended, the attribute bound to a new list, and a handle registered once stay clean."""
    result = run(pytester, PROJECT_ATTRIBUTE_KEPT)
    assert flagged(result) == {"test_pending_list_appended_then_cleared", "test_window_appended_at_each_step"}
    assert len(outcomes(result)) == 5
    result.stdout.fnmatch_lines([
        "*self.sink holds one live list * times (written by the code that keeps it), changed after it was kept*",
        "*self.history holds one live list * times (written by the code that keeps it)*"], consecutive=False)


def test_the_projects_write_into_an_indexs_keys_is_its_own(pytester: pytest.Pytester) -> None:
    """markdown's ``InlineProcessor.run`` (differential run, markdown 3.11.3): a child -> parent map of
    a tree's elements kept in an attribute at each run, then the project changes the elements. The
    map's fingerprint reads into its keys and values; the project wrote them, so the map changed by
    the project's hand: not a finding."""
    result = run(pytester, """
        import xml.etree.ElementTree as etree

        class Inline:
            def run(self, tree):
                self.parent_map = {c: p for p in tree.iter() for c in p}
                for child in list(tree):
                    child.insert(0, etree.Element("em"))
                return tree

        def tree(text):
            root = etree.Element("div")
            etree.SubElement(root, "p").text = text
            return root

        proc = Inline()

        def test_converted_twice():
            proc.run(tree("a"))
            proc.run(tree("b"))
    """)
    assert flagged(result) == set()
    assert len(outcomes(result)) == 1


def test_a_project_modules_function_called_by_attribute_is_known_before_the_call(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``helper.work(xs)``: the callee is read from the module's dict (no ``__getattr__``), so a call
    of the project's own function passes nothing out and costs no reference counts; a library
    module's function (``json.dumps(xs)``) is still looked at."""
    import json
    import types

    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary

    path = str(tmp_path / "calls.py")
    helper = types.ModuleType("helper")
    exec(compile("def work(xs):\n    return len(xs)\n", path, "exec"), vars(helper))
    looked: list[int] = []
    real = boundary._handed_parts
    monkeypatch.setattr(boundary, "_handed_parts", lambda argsets: (looked.append(1), real(argsets))[1])
    _as_project(monkeypatch, path)
    namespace: dict[str, Any] = {"__name__": "calls", "helper": helper, "json": json}
    exec(rewrite.compile_marked("def own(xs):\n    helper.work(xs)\n\ndef lib(xs):\n    json.dumps(xs)\n", path),
         namespace)
    boundary.start(None)
    try:
        boundary.begin()
        namespace["own"]([1, [2]])
        assert looked == []
        namespace["lib"]([1, [2]])
        assert looked
    finally:
        boundary.stop()



def test_a_project_classs_method_called_on_the_class_is_known_before_the_call(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``Node.from_sorted(xs)`` (a classmethod of the project's class, intervaltree's tree building): the
    callee is read from the class's own dict along its MRO (no descriptor, no metaclass code), so the
    call passes nothing out; a library class's method (``collections.OrderedDict.fromkeys``) is looked at."""
    import collections

    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary

    path = str(tmp_path / "tree.py")
    looked: list[int] = []
    real = boundary._handed_parts
    monkeypatch.setattr(boundary, "_handed_parts", lambda argsets: (looked.append(1), real(argsets))[1])
    _as_project(monkeypatch, path)
    source = textwrap.dedent("""
        class Base:
            @classmethod
            def from_sorted(cls, xs):
                return len(xs)

        class Node(Base):
            @staticmethod
            def size(xs):
                return len(xs)

        def own(xs):
            Node.from_sorted(xs)
            Node.size(xs)

        def lib(xs):
            collections.OrderedDict.fromkeys(xs)
    """)
    namespace: dict[str, Any] = {"__name__": "tree", "collections": collections}
    exec(rewrite.compile_marked(source, path), namespace)
    boundary.start(None)
    try:
        boundary.begin()
        namespace["own"]([1, [2]])
        assert looked == []
        namespace["lib"]([1, 2])
        assert looked
    finally:
        boundary.stop()

SHARED_FRAMES = '''
    import multiprocessing as mp
    from multiprocessing import shared_memory

    import numpy as np

    def produce(name, n, ready, go):
        shm = shared_memory.SharedMemory(name=name)
        frame = np.ndarray((4,), dtype=np.int64, buffer=shm.buf)
        for i in range(n):
            go.wait(30)
            go.clear()
            frame[:] = i  # another process refills the one shared frame
            ready.set()
        del frame
        shm.close()

    def run(keep):
        shm = shared_memory.SharedMemory(create=True, size=32)
        ready, go = mp.Event(), mp.Event()
        p = mp.Process(target=produce, args=(shm.name, 3, ready, go))
        p.start()
        frames = []
        try:
            for _ in range(3):
                go.set()
                assert ready.wait(30)
                ready.clear()
                view = np.ndarray((4,), dtype=np.int64, buffer=shm.buf)
                keep(frames, view)
                del view  # dropped before the next frame: only what frames holds is kept
            p.join(30)
            return [f if isinstance(f, int) else int(f[0]) for f in frames]
        finally:
            del frames
            shm.close()  # the program's views are gone: the memory is unmapped now
            shm.unlink()

    def test_buggy_frames_are_one_live_memory():
        assert run(lambda frames, view: frames.append(view)) == [2, 2, 2]

    def test_fixed_frames_are_copies():
        assert run(lambda frames, view: frames.append(view.copy())) == [0, 1, 2]

    def test_reduced_to_numbers_and_dropped():
        assert run(lambda frames, view: frames.append(int(view.sum()))) == [0, 4, 8]
'''


def test_views_of_memory_another_process_writes(pytester: pytest.Pytester) -> None:
    # Memory as the identity across processes: a producer process refills a shared-memory block, and
    # the project keeps views of it. Keeping the views is the bug; a copy, or numbers read from each
    # view before it is dropped, are clean, and a view only the detector still held is neither judged
    # nor read after the program closed the block (that read crashed the process).
    result = run(pytester, SHARED_FRAMES)
    assert outcomes(result) == {"test_buggy_frames_are_one_live_memory": "FAILED",
                                "test_fixed_frames_are_copies": "PASSED",
                                "test_reduced_to_numbers_and_dropped": "PASSED"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*holds * ndarray* (handed out by np.ndarray(*buffer=shm.buf)), changed after it"
                                 " was kept*"])



HAND_OFF = '''
    import multiprocessing as mp
    from multiprocessing import shared_memory

    import numpy as np

    def produce(name, n, ready, go, ack):
        shm = shared_memory.SharedMemory(name=name)
        slot = np.ndarray((4,), dtype=np.int64, buffer=shm.buf)
        for i in range(n):
            go.wait(30)
            go.clear()
            if i:
                ack.wait(30)  # the consumer is done with the frame before: only now refill
                ack.clear()
            slot[:] = i
            ready.set()
        del slot
        shm.close()

    def frames(use):
        shm = shared_memory.SharedMemory(create=True, size=32)
        ready, go, ack = mp.Event(), mp.Event(), mp.Event()
        p = mp.Process(target=produce, args=(shm.name, 3, ready, go, ack))
        p.start()
        try:
            return use(shm, ready, go, ack)
        finally:
            p.join(30)
            shm.close()
            shm.unlink()

    def wait(shm, ready, go):
        go.set()
        assert ready.wait(30)
        ready.clear()
        return np.ndarray((4,), dtype=np.int64, buffer=shm.buf)

    def test_a_window_read_before_each_acknowledgement():
        shm = shared_memory.SharedMemory(create=True, size=32)
        ready, go, ack = mp.Event(), mp.Event(), mp.Event()
        p = mp.Process(target=produce, args=(shm.name, 3, ready, go, ack))
        p.start()
        seen = []
        for _ in range(3):
            go.set()
            assert ready.wait(30)
            ready.clear()
            frame = np.ndarray((4,), dtype=np.int64, buffer=shm.buf)  # the test's own name: a window
            seen.append(int(frame[0]))
            ack.set()
        p.join(30)
        del frame
        shm.close()
        shm.unlink()
        assert seen == [0, 1, 2]

    def test_a_window_bound_in_a_helper():
        def use(shm, ready, go, ack):
            seen = []
            for _ in range(3):
                view = wait(shm, ready, go)
                seen.append(int(view.sum()))
                ack.set()
            del view
            return seen
        assert frames(use) == [0, 4, 8]

    def into(objects):
        def use(shm, ready, go, ack):
            kept = np.empty(3, dtype=object) if objects else np.empty((3, 4), dtype=np.int64)
            for i in range(3):
                view = wait(shm, ready, go)
                kept[i] = view  # int64 rows: the bytes copied in; an object array: the view itself
                ack.set()
            del view
            return [int(row[0]) for row in kept]
        return frames(use)

    def test_a_window_copied_into_the_consumers_own_array():
        assert into(objects=False) == [0, 1, 2]

    def test_windows_kept_in_an_object_array():
        assert into(objects=True) == [2, 2, 2]

    def differences(copy):
        def use(shm, ready, go, ack):
            diffs, prev = [], None
            for _ in range(3):
                view = wait(shm, ready, go)
                if prev is not None:
                    diffs.append(int(view.sum() - prev.sum()))
                prev = view.copy() if copy else view  # without the copy: the same memory, refilled
                ack.set()
            del view, prev
            return diffs
        return frames(use)

    def test_the_previous_frame_kept_for_a_difference():
        assert differences(copy=False) == [0, 0]

    def test_the_previous_frame_copied_for_a_difference():
        assert differences(copy=True) == [4, 4]
'''


def test_a_window_onto_a_slot_under_a_hand_off_is_judged_by_who_can_still_read_it(pytester: pytest.Pytester) -> None:
    # Precision: a producer that refills its one shared slot only after the consumer acknowledged the
    # frame. The consumer's name is a window: bound again, it lets go of the earlier view, which nobody
    # can read any more, so its change is no finding. A second name still holding the earlier view
    # (a frame difference against the same memory, an object array holding each view) could read it:
    # that is. An array of numbers a view is assigned into copies its bytes: no keep.
    result = run(pytester, HAND_OFF)
    assert outcomes(result) == {"test_a_window_read_before_each_acknowledgement": "PASSED",
                                "test_a_window_bound_in_a_helper": "PASSED",
                                "test_a_window_copied_into_the_consumers_own_array": "PASSED",
                                "test_windows_kept_in_an_object_array": "FAILED",
                                "test_the_previous_frame_kept_for_a_difference": "FAILED",
                                "test_the_previous_frame_copied_for_a_difference": "PASSED"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*view holds * ndarray* (handed out by wait(shm, ready, go)), changed after it"
                                 " was kept*"])


VIEWS_IN_TUPLES = '''
    import torch

    def test_weights_kept_in_a_tuple_per_epoch():
        history = []
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            history.append((epoch, model.weight.detach()))  # a view of the live weights
            opt.zero_grad()
            model(torch.ones(4, 3)).sum().backward()
            opt.step()
        assert len(history) == 3

    def test_weights_cloned_into_a_tuple_per_epoch():
        history = []
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            history.append((epoch, model.weight.detach().clone()))
            opt.zero_grad()
            model(torch.ones(4, 3)).sum().backward()
            opt.step()
        assert not torch.equal(history[0][1], history[2][1])

    def test_a_tuple_of_numbers_per_epoch():
        history = []
        model = torch.nn.Linear(3, 1)
        for epoch in range(3):
            history.append((epoch, float(model.weight.sum())))
        assert len(history) == 3
'''


def test_a_view_kept_inside_a_short_tuple_is_judged_as_the_view(pytester: pytest.Pytester) -> None:
    """``history.append((epoch, model.weight.detach()))``: a tuple only the keeper holds, but the view in
    it follows the live weights; a clone in it, or numbers, stay clean."""
    result = run(pytester, VIEWS_IN_TUPLES)
    assert outcomes(result) == {"test_weights_kept_in_a_tuple_per_epoch": "FAILED",
                                "test_weights_cloned_into_a_tuple_per_epoch": "PASSED",
                                "test_a_tuple_of_numbers_per_epoch": "PASSED"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*history holds 3 live tuples (handed out by (epoch, model.weight.detach())), "
                                 "changed after it was kept: history[[]0[]][[]1[]]: tensor bytes changed*"])


MEMORYVIEWS = '''
    import io
    import numpy as np


    def chunks_of(stream, size, copy):
        buf, chunks = bytearray(size), []
        while True:
            n = stream.readinto(buf)
            if not n:
                break
            chunks.append(bytes(buf[:n]) if copy else memoryview(buf)[:n])
        return chunks


    def fields(data):
        view, out = memoryview(data), []
        for i in range(0, len(data), 4):
            out.append(view[i:i + 4])  # zero-copy fields of one buffer nobody writes again
        return out


    def test_views_of_one_refilled_buffer():
        assert len(chunks_of(io.BytesIO(b"abcdefgh"), 4, copy=False)) == 2


    def test_bytes_of_each_chunk():
        assert chunks_of(io.BytesIO(b"abcdefgh"), 4, copy=True) == [b"abcd", b"efgh"]


    def test_zero_copy_fields_of_bytes():
        assert [bytes(f) for f in fields(b"abcdefgh")] == [b"abcd", b"efgh"]


    def test_zero_copy_fields_of_a_bytearray_never_written_again():
        assert [bytes(f) for f in fields(bytearray(b"abcdefgh"))] == [b"abcd", b"efgh"]


    def own_window(kind):
        base = np.zeros(8, np.uint8) if kind == "array" else bytearray(8)
        views = []
        v = base[:4] if kind == "array" else memoryview(base)[:4]
        views.append(v)
        base[0] = 1  # the project's own write into its own memory, through the base
        return views


    def test_own_array_window():
        assert own_window("array")[0][0] == 1


    def test_own_memoryview_window():
        assert own_window("mv")[0][0] == 1
'''


def test_memoryviews_are_judged_by_the_memory_they_view(pytester: pytest.Pytester) -> None:
    """Memory is the identity for a memoryview too: ``chunks.append(memoryview(buf)[:n])`` of one
    buffer ``readinto`` refills keeps one live memory at each turn. Clean: the bytes copied, views of
    immutable bytes, views of a bytearray nobody writes again, and the project's own window onto its
    own memory written through the base (as for an array)."""
    result = run(pytester, MEMORYVIEWS)
    assert outcomes(result) == {"test_views_of_one_refilled_buffer": "FAILED",
                                "test_bytes_of_each_chunk": "PASSED",
                                "test_zero_copy_fields_of_bytes": "PASSED",
                                "test_zero_copy_fields_of_a_bytearray_never_written_again": "PASSED",
                                "test_own_array_window": "PASSED",
                                "test_own_memoryview_window": "PASSED"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*chunks holds 2 memoryviews over one live memory*changed after it was kept*",
                                 "*fix:*keep a copy: chunks.append(bytes(*"], consecutive=False)


KEEPER_NAMED_BY_THE_TEST = '''
    import collections
    import json

    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Index:
        def __init__(self):
            self.groups = []

        def load(self, text):
            for key, group in json.loads(text, object_hook=lambda d: collections.defaultdict(list, d)).items():
                self.groups.append(group)

    def test_defaultdicts_the_test_reads_after_they_were_kept():
        idx = Index()
        idx.load('{"a": {"x": [1]}, "b": {"y": [2]}}')
        assert idx.groups[0]["missing"] == []  # a read that inserts the key: no write any mark sees

    class Decoded(Dataset):
        def __init__(self, n):
            self.n, self.buf = n, np.zeros(3, dtype=np.float32)

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            self.buf[:] = i  # decoded into one reused buffer
            return torch.as_tensor(self.buf)  # a view of it

    class FirstKeeper:
        def __init__(self):
            self.items = []

        def collect_first(self, ds):
            for i, t in enumerate(DataLoader(ds, batch_size=None)):
                if i == 0:
                    self.items.append(t)  # the later items refill its memory

        def collect_first_copy(self, ds):
            for i, t in enumerate(DataLoader(ds, batch_size=None)):
                if i == 0:
                    self.items.append(t.clone())

    def test_a_keeper_only_the_test_names():
        k = FirstKeeper()
        k.collect_first(Decoded(3))
        assert len(k.items) == 1

    def test_a_keeper_only_the_test_names_keeps_a_copy():
        k = FirstKeeper()
        k.collect_first_copy(Decoded(3))
        assert float(k.items[0][0]) == 0.0
'''


def test_a_keeper_only_the_test_names_is_judged_after_the_test_returned(pytester: pytest.Pytester) -> None:
    # k dies with the test's frame: the keep of an array or tensor under it holds that frame till the
    # end check, as a handover does, so that k.items is judged (it was let go of unjudged). A kept dict
    # does not: the test's own reads change a defaultdict (jsonpickle's suite), unseen by any mark.
    result = run(pytester, KEEPER_NAMED_BY_THE_TEST)
    assert outcomes(result) == {"test_a_keeper_only_the_test_names": "FAILED",
                                "test_a_keeper_only_the_test_names_keeps_a_copy": "PASSED",
                                "test_defaultdicts_the_test_reads_after_they_were_kept": "PASSED"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*self.items holds a live Tensor*changed after it was kept*"])


QUEUED_TENSORS = '''
    import torch
    import torch.multiprocessing as mp

    def train(inbox, outbox, fresh):
        model = torch.nn.Linear(4, 1, bias=False)
        torch.nn.init.zeros_(model.weight)
        for _ in range(3):
            with torch.no_grad():
                model.weight.add_(1.0)
            state = model.state_dict()
            inbox.put({k: v.clone() for k, v in state.items()} if fresh else state)
            assert outbox.get(timeout=60) == "ack"  # the receiver has it before the next step
        inbox.put(None)

    def evaluate(inbox, outbox, copy):
        history = []
        while (state := inbox.get(timeout=60)) is not None:
            history.append({k: v.clone() for k, v in state.items()} if copy else state)
            outbox.put("ack")
        outbox.put([float(h["weight"].sum()) for h in history])

    def sent_to_the_test(fresh, copy):
        ctx = mp.get_context("spawn")
        inbox, outbox = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=train, args=(inbox, outbox, fresh))
        p.start()
        history = []
        while (state := inbox.get(timeout=60)) is not None:
            if copy:
                state = {k: v.clone() for k, v in state.items()}
            history.append(state)
            outbox.put("ack")
        p.join(60)
        return [float(h["weight"].sum()) for h in history]

    def sent_to_a_child(copy):
        ctx = mp.get_context("spawn")
        inbox, outbox = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=evaluate, args=(inbox, outbox, copy))
        p.start()
        train(inbox, outbox, False)
        got = outbox.get(timeout=60)
        p.join(60)
        return got

    def test_the_test_keeps_the_senders_live_state():
        assert sent_to_the_test(fresh=False, copy=False) == [12.0, 12.0, 12.0]

    def test_the_test_keeps_copies():
        assert sent_to_the_test(fresh=False, copy=True) == [4.0, 8.0, 12.0]

    def test_the_sender_sends_clones():
        assert sent_to_the_test(fresh=True, copy=False) == [4.0, 8.0, 12.0]

    def test_a_child_keeps_the_senders_live_state():
        assert sent_to_a_child(copy=False) == [12.0, 12.0, 12.0]

    def test_a_child_keeps_copies():
        assert sent_to_a_child(copy=True) == [4.0, 8.0, 12.0]
'''


def test_tensors_a_queue_moved_into_shared_memory_are_the_senders_live_memory(pytester: pytest.Pytester) -> None:
    # Memory as the identity across processes: a torch.multiprocessing queue moves a sent tensor's
    # storage into shared memory, so what the receiver keeps is the sender's live parameters. Kept in
    # a history (in the test's process, or in a child, whose keeps are judged before it exits), the
    # sender's next step changes them; a copy on either side is clean.
    result = run(pytester, QUEUED_TENSORS)
    assert outcomes(result) == {"test_the_test_keeps_the_senders_live_state": "FAILED",
                                "test_the_test_keeps_copies": "PASSED",
                                "test_the_sender_sends_clones": "PASSED",
                                "test_a_child_keeps_the_senders_live_state": "FAILED",
                                "test_a_child_keeps_copies": "PASSED"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*history holds 3 live OrderedDicts (handed out by *), changed after it was kept:"
                                 " history?0?*weight*: tensor bytes changed*",
                                 "*history holds * live OrderedDicts (handed out by *), changed after it was kept*"
                                 "(in SpawnProcess-*)*"], consecutive=False)

YIELDED_VIEWS = '''
    import itertools

    import numpy as np
    import torch

    def blocks(n):
        buf = np.zeros(4)
        for i in range(n):
            buf[:] = i  # refilled in place
            yield buf[:]  # a new view of the one buffer

    def rows(n):
        table = np.zeros((n, 4))
        for i in range(n):
            table[i] = i  # each row written once
            yield table[i]

    def tensor_blocks(n):
        buf = torch.zeros(4)
        for i in range(n):
            buf.fill_(i)
            yield buf[:]

    def test_buggy_list():
        assert [b[0] for b in list(blocks(3))] == [2, 2, 2]

    def test_buggy_islice():
        assert list(itertools.islice(blocks(5), 3))[0][0] == 2

    def test_buggy_tensor_views():
        assert [float(b[0]) for b in list(tensor_blocks(3))] == [2.0, 2.0, 2.0]

    def test_rows_written_once():
        assert [b[0] for b in list(rows(3))] == [0, 1, 2]

    def test_a_loop_reading_each():
        assert sum(float(b.sum()) for b in blocks(3)) == 12.0

    def test_copies_kept():
        assert [b.copy()[0] for b in blocks(3)] == [0, 1, 2]
'''


def test_views_a_generator_yields_of_one_buffer(pytester: pytest.Pytester) -> None:
    # Memory as the identity for a generator's items: yield buf[:] hands out a new view each time;
    # a collection that keeps them keeps one buffer the generator refills. Rows written once, a loop
    # that reads each view and copies are clean.
    result = run(pytester, YIELDED_VIEWS)
    assert flagged(result) == {"test_buggy_list", "test_buggy_islice", "test_buggy_tensor_views"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*a list holds ndarrays over one live memory (views of buf, yielded by blocks()),"
                                 " changed after it was kept: *buf refilled by blocks() after a view of it*"])


CONTEXTS = """
    import asyncio
    import contextvars

    request = contextvars.ContextVar("request")

    async def handler(started, done):
        started.set()
        await done.wait()
        info = request.get()           # the task's own copy of the context
        return info["user"]

    def test_buggy():
        async def main():
            request.set({"user": "alice"})
            started, done = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(handler(started, done))
            await started.wait()
            info = request.get()
            info["user"] = "bob"        # changes the dict the task's context shares
            done.set()
            return await task
        assert asyncio.run(main()) == "bob"

    def test_fixed():
        async def main():
            request.set({"user": "alice"})
            started, done = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(handler(started, done))
            await started.wait()
            request.set({**request.get(), "user": "bob"})   # a new value: the task keeps its own
            done.set()
            return await task
        assert asyncio.run(main()) == "alice"

    async def own(started, done):
        info = request.get()
        info["seen"] = True            # the task writes into its inherited dict itself
        started.set()
        await done.wait()
        got = request.get()
        return got["seen"]

    def test_task_reads_its_own_write():
        async def main():
            request.set({"user": "alice"})
            started, done = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(own(started, done))
            await started.wait()
            done.set()
            return await task
        assert asyncio.run(main()) is True
"""


def test_a_tasks_context_copy_shares_its_mutable_values(pytester: pytest.Pytester) -> None:
    # Runtime shallow copies: create_task copies the context shallowly. The creator changing the dict
    # the task's copy shares, read by the task afterwards, is the finding; setting a new value and the
    # task's own writes are clean.
    result = run(pytester, CONTEXTS)
    assert flagged(result) == {"test_buggy"}, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*task Task-* read ContextVar 'request' (test_user.py:9), whose value its context copy shares, "
        "changed after the copy was made: *'alice' -> 'bob'",
        "*fix: test_user.py:9: set a new value (request.set({**request.get(), ...})) instead of changing the shared*"])



CONTEXT_READ_IN_EXPRESSIONS = """
    import asyncio
    import contextvars
    from contextvars import ContextVar

    request = contextvars.ContextVar("request")

    class CallContext:
        _map: ContextVar[dict] = ContextVar("_map")

        @classmethod
        def user(cls):
            return cls._map.get()["user"]  # read in the expression: never bound to a name

    async def handler(started, done):
        started.set()
        await done.wait()
        if request.get()["user"] == "bob":   # a read in a test
            return "bob"
        return request.get()["user"]

    async def audit(started, done):
        started.set()
        await done.wait()
        return CallContext.user()

    def serve(task_of, var, change):
        async def main():
            var.set({"user": "alice"})
            started, done = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(task_of(started, done))
            await started.wait()
            change(var)
            done.set()
            return await task
        return asyncio.run(main())

    def in_place(var):
        var.get()["user"] = "bob"        # the dict every task's context copy shares

    def new_value(var):
        var.set({**var.get(), "user": "bob"})

    def test_buggy_read_in_a_test():
        assert serve(handler, request, in_place) == "bob"

    def test_buggy_class_attribute():
        assert serve(audit, CallContext._map, in_place) == "bob"

    def test_fixed_read_in_a_test():
        assert serve(handler, request, new_value) == "alice"

    def test_fixed_class_attribute():
        assert serve(audit, CallContext._map, new_value) == "alice"

    def test_no_task_reads_it():
        request.set({"user": "alice"})
        in_place(request)
        assert request.get()["user"] == "bob"
"""


def test_a_context_value_read_inside_an_expression_is_a_tasks_read(pytester: pytest.Pytester) -> None:
    # Runtime shallow copies, whatever the binding form: ``var.get()["user"]`` in a return, a test, a
    # class's ContextVar read through ``cls._map.get()``. Setting a new value is clean, and so is a
    # change no task's copy shares.
    result = run(pytester, CONTEXT_READ_IN_EXPRESSIONS)
    assert flagged(result) == {"test_buggy_read_in_a_test", "test_buggy_class_attribute"}, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*task Task-* read ContextVar 'request' (test_user.py:17), whose value its context copy shares, "
        "changed after the copy was made: *'alice' -> 'bob'",
        "*task Task-* read ContextVar '_map' (test_user.py:12), whose value its context copy shares*"])


CONTEXT_MODULE = """
    from contextvars import ContextVar

    request = ContextVar("request")
    spans = ContextVar("spans", default={})
    settings = {"mode": "fast"}
"""

CONTEXT_IMPORTED = """
    import asyncio
    import reqctx
    from reqctx import request, settings

    async def impersonate(switched):
        request.get()["user"] = "service"  # in place: the siblings' copies share the dict
        switched.set()

    async def impersonate_fixed(switched):
        request.set({**request.get(), "user": "service"})
        switched.set()

    async def audit(switched):
        await switched.wait()
        return request.get()["user"]

    def serve(helper):
        async def main():
            request.set({"user": "alice"})
            switched = asyncio.Event()
            first = asyncio.create_task(helper(switched))
            second = asyncio.create_task(audit(switched))
            await first
            return await second
        return asyncio.run(main())

    def test_buggy_imported_name():
        assert serve(impersonate) == "service"

    def test_a_new_value_set():
        assert serve(impersonate_fixed) == "alice"

    async def note(name):
        await asyncio.sleep(0)
        reqctx.spans.get()[name] = 1

    def test_buggy_default_through_the_module():
        async def main():
            await asyncio.gather(note("a"), note("b"))
        asyncio.run(main())

    def test_a_mappings_get_is_left_as_it_is():
        assert settings.get("mode") == "fast" and settings.get("none") is None
"""


def test_a_context_var_another_module_made_is_read_as_its_own(pytester: pytest.Pytester) -> None:
    # A ContextVar imported from another module (``from ctx import request``, ``ctx.spans``): its
    # ``.get()`` in an expression is a task's read as for one the module made; a mapping's ``get(key)``
    # is never taken for one.
    pytester.makepyfile(reqctx=textwrap.dedent(CONTEXT_MODULE))
    result = run(pytester, CONTEXT_IMPORTED)
    assert flagged(result) == {"test_buggy_imported_name", "test_buggy_default_through_the_module"}, \
        result.stdout.str()
    result.stdout.fnmatch_lines([
        "*task Task-* read ContextVar 'request' (test_user.py:*), whose value its context copy shares, "
        "changed after the copy was made: *'alice' -> 'service'"])


CONTEXT_DEFAULTS = """
    import asyncio
    import contextvars
    import threading

    spans = contextvars.ContextVar("spans", default={})
    config = contextvars.ContextVar("config", default={})
    tags = contextvars.ContextVar("tags", default=[])
    mine = contextvars.ContextVar("mine", default=None)

    async def call(name):
        own = spans.get()
        own.setdefault("names", []).append(name)
        await asyncio.sleep(0)
        return list(spans.get()["names"])

    def test_buggy_tasks_write_the_default():
        async def main():
            return await asyncio.gather(call("a"), call("b"))
        assert asyncio.run(main()) == [["a", "b"], ["a", "b"]]

    def test_buggy_threads_write_the_default():
        done = threading.Event()
        def writer():
            config.get()["mode"] = "slow"
            done.set()
        config.get()
        t = threading.Thread(target=writer)
        t.start()
        t.join()
        assert config.get()["mode"] == "slow"

    async def own_call(name):
        got = mine.get()
        if got is None:
            got = {}
            mine.set(got)
        got.setdefault("names", []).append(name)
        await asyncio.sleep(0)
        return list(mine.get()["names"])

    def test_fixed_a_value_per_context():
        async def main():
            return await asyncio.gather(own_call("a"), own_call("b"))
        assert asyncio.run(main()) == [["a"], ["b"]]

    def test_filled_before_the_tasks_are_made():
        async def reader():
            await asyncio.sleep(0)
            return config.get()["level"]
        async def main():
            config.get()["level"] = 3
            return await asyncio.gather(reader(), reader())
        assert asyncio.run(main()) == [3, 3]

    def test_a_default_never_written():
        async def one(t):
            tags.set(tags.get() + [t])
            await asyncio.sleep(0)
            return tags.get()
        async def main():
            return await asyncio.gather(one("x"), one("y"))
        assert asyncio.run(main()) == [["x"], ["y"]]
"""


def test_a_context_vars_mutable_default_is_shared_by_every_context(pytester: pytest.Pytester) -> None:
    # A ContextVar's default is in no context: every task and thread reads the one object. A read after
    # another task or thread, started no later, wrote into it is the finding; a value set per context,
    # a default filled before the tasks were made, and one never written are clean.
    result = run(pytester, CONTEXT_DEFAULTS)
    assert flagged(result) == {"test_buggy_tasks_write_the_default", "test_buggy_threads_write_the_default"}, \
        result.stdout.str()
    result.stdout.fnmatch_lines([
        "*task Task-* read the default of ContextVar 'spans' (test_user.py:14), which every context shares, "
        "after another task or thread wrote into it: *'names'*: <missing> -> *'a', 'b'*",
        "*fix: test_user.py:14: give ContextVar 'spans' no mutable default (default=None)*"])


REPEATED = """
    def test_buggy_grid():
        rows = [[0] * 3] * 3
        rows[0][0] = 1
        assert rows[2][0] == 1

    def test_buggy_fromkeys():
        groups = dict.fromkeys("ab", [])
        for word in ("apple", "bob"):
            groups[word[0]].append(word)
        assert groups["b"] == ["apple", "bob"]

    class Frames:
        def __init__(self, n):
            self.frames = [[]] * n

        def add(self, env, frame):
            self.frames[env].append(frame)

    def test_buggy_attribute():
        f = Frames(2)
        f.add(0, "a")
        assert f.frames[1] == ["a"]

    def test_fixed_comprehension():
        rows = [[0] * 3 for _ in range(3)]
        rows[0][0] = 1
        assert rows[2][0] == 0

    def test_fixed_dict_comprehension():
        groups = {k: [] for k in "ab"}
        groups["a"].append("apple")
        assert groups["b"] == []

    def test_read_only():
        rows = [[0] * 3] * 3
        assert sum(map(sum, rows)) == 0

    def test_positions_replaced():
        rows = [[0] * 3] * 3
        rows[0] = [1, 2, 3]          # a new list at one position: nothing shared is written
        assert rows[1] == [0, 0, 0]

    def test_every_row_written_as_one():
        rows = [[0] * 3] * 3
        for row in rows:             # not addressed by position: the loop writes each row alike
            row[0] = 7
        assert [r[0] for r in rows] == [7, 7, 7]

    def test_fromkeys_rebound():
        groups = dict.fromkeys("ab", [])
        groups["a"] = groups["a"] + ["apple"]   # a new list bound at one key
        assert groups["b"] == []

    def test_buggy_fromkeys_extended_in_place():
        index = dict.fromkeys("ab", [])
        for word in ("apple", "bob"):
            index[word[0]] += [word]             # a list's += extends the one shared list
        assert index["b"] == ["apple", "bob"]

    def test_counts_added_at_one_key():
        counts = dict.fromkeys("ab", 0)
        counts["a"] += 1                        # an int: += binds a new value at that key
        assert counts["b"] == 0

    def test_buggy_arrays():
        import numpy as np
        bufs = [np.zeros(3)] * 2
        bufs[0][1] = 5.0
        assert bufs[1][1] == 5.0

    def test_one_shared_on_purpose():
        shared = []
        slots = [shared] * 3         # a name repeated: one object the program means to share
        slots[0].append(1)
        assert slots[2] == [1]
"""


def test_one_object_at_several_positions_written_through_one(pytester: pytest.Pytester) -> None:
    # A repetition that makes one new mutable object and puts it at every position ([[0] * n] * n,
    # [[]] * n, dict.fromkeys(keys, [])), then a write into it addressed by one position: every other
    # position changes with it. A comprehension, reads, a position replaced, a loop writing every row
    # alike, and an object the program names and repeats on purpose are clean.
    result = run(pytester, REPEATED)
    assert flagged(result) == {"test_buggy_grid", "test_buggy_fromkeys", "test_buggy_attribute", "test_buggy_arrays",
                               "test_buggy_fromkeys_extended_in_place"}, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*rows holds one list at 3 positions (*): a write through rows[[]0] changes every position",
        "*fix: test_user.py:3: make one list per position where it is made (test_user.py:2): "
        "rows = [[][[]0] * 3 for _ in range(3)]",
        "*groups holds one list at 2 positions (dict.fromkeys('ab', [[]])): a write through groups[[]'a'] changes*",
        "*self.frames holds one list at 2 positions*"])


DEFAULT_ARGUMENTS = """
    class Transaction:
        def __init__(self, inputs=[], version=1):
            self.inputs = inputs
            self.version = version

        def add_input(self, txin):
            self.inputs.append(txin)

    class Tagged:
        def __init__(self, tags={}):
            self.tags = tags

    class Shared:
        def __init__(self, inputs=[]):
            self.inputs = inputs

    class Alone:
        def __init__(self, inputs=[]):
            self.inputs = inputs

    def test_buggy_written_while_two_hold_it():
        a, b = Transaction(), Transaction()
        a.add_input("in0")
        assert b.inputs == ["in0"]

    def test_buggy_kept_after_a_write():
        a = Tagged()
        a.tags["k"] = 1
        b = Tagged()
        assert b.tags == {"k": 1}

    class Fixed:
        def __init__(self, inputs=None):
            self.inputs = [] if inputs is None else inputs

    def test_fixed():
        a, b = Fixed(), Fixed()
        a.inputs.append("in0")
        assert b.inputs == []

    def test_shared_on_purpose():
        shared = []
        a, b = Shared(shared), Shared(shared)   # the caller passes one list to both
        a.inputs.append("in0")
        assert b.inputs == ["in0"]

    def test_one_keeper():
        a = Alone()
        a.inputs.append("x")
        assert a.inputs == ["x"]

    def memo(n, _cache={}):
        if n not in _cache:
            _cache[n] = n * n
        return _cache[n]

    def test_memo_idiom():
        assert memo(3) == 9 and memo(4) == 16 and memo(3) == 9

    def stamp(x, seen=[]):
        seen.append(x)
        return seen

    def test_buggy_returned_again():
        first = stamp(1)
        stamp(2)
        assert first == [1, 2]

    def count(x, seen=set()):
        seen.add(x)
        return seen

    def test_returns_dropped():
        for x in range(3):
            assert x in count(x)

    def registry(_reg={}):
        return _reg

    def test_registry_its_callers_fill():
        r = registry()
        r["a"] = 1
        registry()["b"] = 2
        assert registry() is r

    def make_event(name, tags=[]):
        return {"name": name, "tags": tags}

    def make_event_fresh(name, tags=None):
        return {"name": name, "tags": list(tags or [])}

    def test_buggy_events_share_the_default_tags():
        events = []
        for name, extra in (("start", ["boot"]), ("tick", [])):
            event = make_event(name)
            event["tags"].extend(extra)
            events.append(event)
        assert events[1]["tags"] == ["boot"]

    def test_events_with_tags_of_their_own():
        events = []
        for name, extra in (("start", ["boot"]), ("tick", [])):
            event = make_event_fresh(name)
            event["tags"].extend(extra)
            events.append(event)
        assert events[1]["tags"] == []

    def make_note(name, tags=[]):
        return {"name": name, "tags": tags}

    def test_notes_whose_default_tags_nobody_writes():
        assert [make_note(n)["tags"] for n in "ab"] == [[], []]
"""


def test_a_default_argument_kept_by_two_objects_and_written(pytester: pytest.Pytester) -> None:
    # A mutable default (inputs=[]) is one object: every call that omits the argument hands it to its
    # keeper. Written while two objects hold it, or kept by a new one after a write: the finding; so is
    # a function returning its default again, written by itself since, while a caller holds the last.
    # A None default, a list the caller passes to both on purpose, one keeper, a cache kept in a
    # default, returns nobody keeps, and a registry its callers fill are clean.
    result = run(pytester, DEFAULT_ARGUMENTS)
    assert flagged(result) == {"test_buggy_written_while_two_hold_it", "test_buggy_kept_after_a_write",
                               "test_buggy_returned_again", "test_buggy_events_share_the_default_tags"}, \
        result.stdout.str()
    result.stdout.fnmatch_lines([
        "*self.inputs keeps the one default list of Transaction.__init__(inputs=...) (2 objects "
        "hold it), changed through another: <root>: list grew from 0 to 1 item (appended 'in0')",
        "*fix: *give inputs the default None and make a new list in each call*",
        "*stamp() returns its default argument seen, one list every call gets: a caller still holds the one "
        "returned before, changed since: <root>: list grew from 1 to 2 items (appended 2)"])


THREAD_CONTEXTS = """
    import asyncio
    import contextvars
    import threading

    request = contextvars.ContextVar("request")

    def worker(started, go):
        started.set()
        assert go.wait(30)
        info = request.get()           # the thread reads the context copy it runs in
        return info["user"]

    async def handle(in_place):
        request.set({"user": "alice"})
        started, go = threading.Event(), threading.Event()
        pending = asyncio.ensure_future(asyncio.to_thread(worker, started, go))
        while not started.is_set():
            await asyncio.sleep(0)
        if in_place:
            request.get()["user"] = "bob"   # changes the dict the thread's copy shares
        else:
            request.set({"user": "bob"})    # a new value: the copy keeps alice
        go.set()
        return await pending

    def test_to_thread_buggy():
        assert asyncio.run(handle(in_place=True)) == "bob"

    def test_to_thread_fixed():
        assert asyncio.run(handle(in_place=False)) == "alice"

    def run_in_copy(change):
        request.set({"user": "alice"})
        ctx = contextvars.copy_context()
        started, go, out = threading.Event(), threading.Event(), []
        t = threading.Thread(target=ctx.run, args=(lambda: out.append(worker(started, go)),))
        t.start()
        assert started.wait(30)
        change()
        go.set()
        t.join(30)
        return out

    def rename():
        info = request.get()
        info["user"] = "carol"          # in place, after the copy

    def test_thread_target_ctx_run_buggy():
        assert run_in_copy(rename) == ["carol"]

    def test_thread_target_ctx_run_fixed():
        assert run_in_copy(lambda: request.set({"user": "carol"})) == ["alice"]

    def test_a_plain_thread_is_not_a_copy():
        request.set({"user": "alice"})
        started, go, out = threading.Event(), threading.Event(), []
        t = threading.Thread(target=lambda: out.append(request.get(None)))
        t.start()
        request.get()["user"] = "dave"
        t.join(30)
        assert out == [None]
"""


def test_a_threads_context_copy_shares_its_mutable_values(pytester: pytest.Pytester) -> None:
    # Runtime shallow copies run by threads: asyncio.to_thread and Thread(target=ctx.run) run a call in
    # a copy of the context. The creator changing the dict the copy shares before the thread reads it
    # is the finding; a new value set is clean, and a plain thread (an empty context) copies nothing.
    result = run(pytester, THREAD_CONTEXTS)
    assert flagged(result) == {"test_to_thread_buggy", "test_thread_target_ctx_run_buggy"}, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*thread asyncio_* read ContextVar 'request' (test_user.py:10), whose value its context copy shares, "
        "changed after the copy was made: *'alice' -> 'bob'"])

LOADER_ITEMS = '''
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Frames(Dataset):
        def __init__(self, n):
            self.n = n
            self.buf = np.zeros(4, dtype=np.float32)  # one decode buffer, reused

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            self.buf[:] = i
            return self.buf

    class Fresh(Frames):
        def __getitem__(self, i):
            return np.full(4, i, dtype=np.float32)

    def test_buggy_items_share_the_decode_buffer():
        kept = []
        for x in DataLoader(Frames(3), batch_size=None):  # no batching: as_tensor shares the array's memory
            kept.append(x)
        assert [float(t[0]) for t in kept] == [2.0, 2.0, 2.0]

    def test_fixed_clones():
        kept = []
        for x in DataLoader(Frames(3), batch_size=None):
            kept.append(x.clone())
        assert [float(t[0]) for t in kept] == [0.0, 1.0, 2.0]

    def test_fresh_arrays_per_item():
        kept = []
        for x in DataLoader(Fresh(3), batch_size=None):
            kept.append(x)
        assert [float(t[0]) for t in kept] == [0.0, 1.0, 2.0]

    def test_batched_items_are_new_tensors():
        kept = []
        for x in DataLoader(Fresh(4), batch_size=2):  # collate stacks them into a new tensor
            kept.append(x)
        assert [float(t[0][0]) for t in kept] == [0.0, 2.0]
'''


def test_a_loaders_items_over_one_numpy_buffer(pytester: pytest.Pytester) -> None:
    # Memory shared by a conversion the project never sees: with no batching a DataLoader turns each
    # NumPy item into a tensor with torch.as_tensor, over the array's memory. A tensor whose storage
    # torch did not allocate is a view; the dataset's refill changes every kept item.
    result = run(pytester, LOADER_ITEMS)
    assert flagged(result) == {"test_buggy_items_share_the_decode_buffer"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*kept holds 3 Tensors over one live memory (handed out by DataLoader(Frames(3),"
                                 " batch_size=None)*"])


def test_the_memory_look_at_a_keep_reads_three_levels_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    # A kept container is looked into for views of memory someone else writes (a received state dict's
    # shared tensors): its first three levels, never a walk of what the project built (a linked ring of
    # cells: boltons' OrderedMultiDict's keeps walked their ring, 4 s to 71 s on its suite).
    import numpy  # noqa: F401 - the buffer types known, so the look runs

    import aliascheck.boundary.runtime as boundary

    cells: list[list[Any]] = [[None, None, i] for i in range(10_000)]
    for before, after in zip(cells, cells[1:], strict=False):
        before[1], after[0] = after, before
    root = cells[0]
    del cells
    looked: list[int] = []
    real = boundary.gc.get_referents
    monkeypatch.setattr(boundary.gc, "get_referents", lambda *objs: (looked.append(len(objs)), real(*objs))[1])
    assert boundary._holds_foreign_memory({"ring": root}) is False
    assert len(looked) <= 3


LOGGED = """
    import logging
    import logging.handlers

    log = logging.getLogger("work")

    def progress(n):
        done = []
        for step in range(n):
            done.append(step)
            log.warning("done so far: %s", done)
        return done

    def test_logged_live_list_pytest_captures():
        assert progress(3) == [0, 1, 2]

    def test_logged_live_list_with_caplog(caplog):
        caplog.set_level(logging.INFO)
        assert progress(3) == [0, 1, 2]

    def test_logged_live_list_buffered_by_the_program():
        buffer = logging.handlers.MemoryHandler(capacity=100, target=logging.StreamHandler())
        log.addHandler(buffer)
        try:
            assert progress(3) == [0, 1, 2]
        finally:
            log.removeHandler(buffer)
"""


def test_a_log_record_only_pytests_capture_keeps_is_the_harness_not_the_program(pytester: pytest.Pytester) -> None:
    """``log.warning("...", live)``: pytest's log capture keeps each record (its handlers' ``records``)
    in every suite, and that is the harness's, not the program's. A ``MemoryHandler`` the program
    installed keeps the same record unformatted until it flushes: the program's, a finding."""
    result = run(pytester, LOGGED)
    assert flagged(result) == {"test_logged_live_list_buffered_by_the_program"}
    result.stdout.fnmatch_lines(["*logging.Logger.warning kept done; the project changed it*"])


COLLECTED = """
    import asyncio
    import itertools
    from concurrent.futures import ThreadPoolExecutor

    _row = {}

    async def parse(line):
        await asyncio.sleep(0)
        _row.clear()
        _row["id"] = int(line)
        return _row

    async def parse_fresh(line):
        await asyncio.sleep(0)
        row = {}
        row["id"] = int(line)
        return row

    def test_buggy_gather_bound_by_the_test():
        async def main():
            return await asyncio.gather(*(parse(x) for x in "123"))
        rows = asyncio.run(main())
        assert [r["id"] for r in rows] == [3, 3, 3]

    async def ids(lines):
        rows = await asyncio.gather(*(parse(x) for x in lines))
        return [r["id"] for r in rows]

    def test_buggy_gather_awaited_in_project_code():
        assert asyncio.run(ids("12")) == [2, 2]

    def test_fresh_gathered():
        async def main():
            return await asyncio.gather(*(parse_fresh(x) for x in "123"))
        assert [r["id"] for r in asyncio.run(main())] == [1, 2, 3]

    CONFIG = {"mode": "fast"}

    async def config(line):
        await asyncio.sleep(0)
        return CONFIG

    def test_one_config_never_written_gathered():
        async def main():
            return await asyncio.gather(*(config(x) for x in "abc"))
        rows = asyncio.run(main())
        assert rows[0] is rows[2]

    def parse_sync(line):
        _row.clear()
        _row["id"] = int(line)
        return _row

    def test_read_at_once():
        out = []
        for line in "123":
            row = parse_sync(line)
            out.append(row["id"])
        assert out == [1, 2, 3]

    def test_buggy_pool_map():
        with ThreadPoolExecutor(2) as pool:
            rows = list(pool.map(parse_sync, "123456"))
        assert rows[0] is rows[5]

    def stamp(row, i):
        row["id"] = i
        return row

    def test_a_parameter_handed_back_is_the_callers():
        mine = {}
        rows = [stamp(mine, i) for i in range(3)]
        assert rows[0] is rows[2]

    def rows_of(lines):
        row = {}
        for line in lines:
            row.clear()
            row["id"] = int(line)
            yield row

    def rows_fresh(lines):
        for line in lines:
            row = {}
            row["id"] = int(line)
            yield row

    def test_buggy_list_of_a_refilling_generator():
        rows = list(rows_of("123"))
        assert rows[0] is rows[2]

    def test_a_generator_of_new_rows_listed():
        assert [r["id"] for r in list(rows_fresh("123"))] == [1, 2, 3]

    def test_a_refilling_generator_read_one_at_a_time():
        assert [r["id"] for r in rows_of("123")] == [1, 2, 3]

    def test_buggy_pairs_of_a_refilling_generator():
        pairs = [(a["id"], b["id"]) for a, b in itertools.pairwise(rows_of("123"))]
        assert pairs == [(2, 2), (3, 3)]

    def test_buggy_pairs_of_a_refilling_generator_in_a_loop():
        steps = []
        for a, b in itertools.pairwise(rows_of("123")):
            steps.append(b["id"] - a["id"])
        assert steps == [0, 0]

    def test_a_refilling_generator_zipped_in_a_comprehension():
        assert [r["id"] * k for r, k in zip(rows_of("123"), range(3))] == [0, 2, 6]

    def test_a_refilling_generator_enumerated_in_a_comprehension():
        assert [r["id"] + k for k, r in enumerate(rows_of("123"))] == [1, 3, 5]

    def test_tee_of_a_refilling_generator_read_in_lockstep():
        ahead, behind = itertools.tee(rows_of("123"))
        assert [a["id"] + b["id"] for a, b in zip(ahead, behind)] == [2, 4, 6]

    def test_pairs_of_new_rows():
        pairs = [(a["id"], b["id"]) for a, b in itertools.pairwise(rows_fresh("123"))]
        assert pairs == [(1, 2), (2, 3)]

    def test_tee_of_new_rows():
        ahead, behind = itertools.tee(rows_fresh("123"))
        assert [r["id"] for r in ahead] == [r["id"] for r in behind] == [1, 2, 3]

    _NODES = {}

    def intern_node(name):
        node = _NODES.setdefault(name, {"name": name, "refs": 0})
        node["refs"] += 1
        return node

    class Registry:
        def __init__(self):
            self._by_name = {}

        def get(self, name):
            entry = self._by_name.setdefault(name, {"name": name, "hits": 0})
            entry["hits"] += 1
            return entry

    class Env:
        def __init__(self):
            self._obs = {"t": 0}

        def step(self, action):
            self._obs["t"] += 1
            self._obs["action"] = action
            return self._obs

    def test_an_identity_map_listed():
        nodes = list(map(intern_node, ["a", "b", "a"]))
        assert nodes[0] is nodes[2] and nodes[0]["refs"] == 2

    def test_a_registry_methods_lookups_listed():
        reg = Registry()
        entries = list(map(Registry().get, "xy")) + list(map(reg.get, ["x", "y", "x"]))
        assert entries[2] is entries[4]

    def test_buggy_two_envs_each_refilling_its_one_obs():
        first, second = Env(), Env()
        seen = list(map(lambda env: env.step(0), [first, second, first]))
        assert seen[0] is seen[2]

    def test_buggy_envs_stepped_in_a_comprehension():
        first, second = Env(), Env()
        seen = [env.step(i) for i, env in enumerate([first, second, first])]
        assert seen[0] is seen[2]

    def test_envs_stepped_and_copied_in_a_comprehension():
        first, second = Env(), Env()
        seen = [dict(env.step(i)) for i, env in enumerate([first, second, first])]
        assert [s["action"] for s in seen] == [0, 1, 2]
"""


def test_one_object_refilled_and_handed_out_again_collected_by_a_library(pytester: pytest.Pytester) -> None:
    # Consumers are keepers: asyncio.gather, an executor's map and list() hold every result at once;
    # itertools.pairwise hands out the previous item again beside the next (a tee read in lockstep is clean,
    # and so is zip's or enumerate's result tuple, which holds the last item only until the next).
    # A function (or coroutine, or generator) that writes into something it keeps past the call and
    # hands it out again hands out one object: the collected list holds it at several places, each
    # showing the last fill. New objects, a container never written, results read at once, and a
    # parameter the caller passes and gets back are clean, as is a lookup that returns each key its
    # own object (an identity map, a registry's method: several objects returned for one instance).
    result = run(pytester, COLLECTED)
    assert flagged(result) == {"test_buggy_gather_bound_by_the_test", "test_buggy_gather_awaited_in_project_code",
                               "test_buggy_pool_map", "test_buggy_list_of_a_refilling_generator",
                               "test_buggy_two_envs_each_refilling_its_one_obs",
                               "test_buggy_envs_stepped_in_a_comprehension",
                               "test_buggy_pairs_of_a_refilling_generator",
                               "test_buggy_pairs_of_a_refilling_generator_in_a_loop"}, result.stdout.str()
    assert len(outcomes(result)) == 22
    result.stdout.fnmatch_lines([
        "*a list holds one live dict 3 times (returned by parse()), changed after it was kept*",
        "*let out:  *test_user.py:* in parse",
        "*fix: *return a copy: return _row.copy()",
    ])


def test_a_yielded_buffer_the_projects_loop_keeps_inside_a_tuple(pytester: pytest.Pytester) -> None:
    """``frames.append((i, frame))`` of a generator's one refilled buffer: the loop's keep is of a new
    tuple, so the buffer is looked for among the tuples a list, dict or deque holds at its next
    yield. A tuple only a local names, or one holding a copy, keeps nothing."""
    result = run(pytester, """
        import numpy as np

        def frames(n):
            buf = np.zeros(3)
            for i in range(n):
                buf[:] = i
                yield buf

        def test_pairs_kept_in_a_list():
            out = []
            for i, f in enumerate(frames(3)):
                out.append((i, f))
            assert [p[1][0] for p in out] == [2, 2, 2]

        def test_pairs_kept_in_a_dict():
            out = {}
            for i, f in enumerate(frames(3)):
                out[i] = (i, f)

        def test_a_pair_named_by_a_local():
            total = 0.0
            for i, f in enumerate(frames(3)):
                pair = (i, f)
                total += pair[1].sum()
            assert total == 9.0

        def test_pairs_of_copies():
            out = []
            for i, f in enumerate(frames(3)):
                out.append((i, f.copy()))
            assert [p[1][0] for p in out] == [0, 1, 2]
    """)
    assert flagged(result) == {"test_pairs_kept_in_a_list", "test_pairs_kept_in_a_dict"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*a tuple holds a live ndarray (yielded by frames()), changed after it was kept*"])


def test_a_name_the_loop_head_binds_is_not_one_object_refilled() -> None:
    """``row["n"] = 1; rows.append(row)`` is one object refilled only when nothing binds ``row`` at each
    turn: a ``for`` target or a walrus in a ``while`` test (``while (row := await q.get()) is not
    None``) binds a new one, and the keep is asked as any other (the asyncio pipeline recorded every
    item when the walrus was missed)."""
    import ast

    from aliascheck.boundary import rewrite

    def marked(source: str) -> str:
        tree = ast.parse(textwrap.dedent(source))
        rewrite.mark(tree, base=0)
        return ast.unparse(tree)

    refilled = "REFILLED(row, True)"
    assert refilled in marked("""
        def f(q, rows):
            row = {}
            while q:
                row["n"] = q.pop()
                rows.append(row)
    """)
    assert refilled not in marked("""
        async def f(q, rows):
            while (row := await q.get()) is not None:
                row["n"] = 1
                rows.append(row)
    """)
    assert refilled not in marked("""
        def f(items, rows):
            for row in items:
                row["n"] = 1
                rows.append(row)
    """)


def test_the_items_of_a_parameter_are_the_callers(pytester: pytest.Pytester, lib: None) -> None:
    """``out.append(rows[0])`` and ``for row in rows: out.append(row)`` in a project function: the
    items are its caller's, as the parameter is (rule Kept, the caller decides). A library's callback
    given the library's live rows, refilled later, keeps one of them again and again: flagged. The
    project's own rows, passed by the project and later filled by a library it asked: clean."""
    result = run(pytester, """
        import mylib

        def keep_rows(rows, out):
            for row in rows:
                out.append(row)

        def keep_first(rows, out):
            out.append(rows[0])

        def test_a_callback_keeps_the_librarys_first_row():
            seen = []
            mylib.batches(lambda rows: keep_first(rows, seen))

        def test_the_project_passes_its_own_rows():
            rows = [{"i": 0}, {"i": 0}]
            out = []
            keep_rows(rows, out)
            keep_first(rows, out)
            for i, row in enumerate(rows):
                mylib.fill(row, i + 1)
            assert [r["i"] for r in out] == [1, 2, 1]
    """)
    assert flagged(result) == {"test_a_callback_keeps_the_librarys_first_row"}, result.stdout.str()[-3000:]


def test_a_shallow_copy_of_a_parameter_is_the_callers(pytester: pytest.Pytester, lib: None) -> None:
    """``out.append(event.copy())`` in a project function: the copy shares the parameter's parts, which
    are its caller's, as the parameter is. structlog's ProcessorFormatter hands its processors an event
    dict holding the log record it then renders into (``record.msg = rendered``); a processor keeping
    ``ed.copy()`` keeps the record on purpose (structlog's own suite: 12 tests failed only under
    --aliascheck). A library's callback keeping ``ed.copy()`` of the library's event, whose entry the
    library renders into afterwards, still keeps the library's live value: flagged. The keepers outlive
    each test, as structlog's do (its formatter, configured into logging, holds them): judged at teardown."""
    result = run(pytester, """
        import copy
        import logging
        import mylib

        COPIES, COPY_COPIES, LIBRARY = [], [], []

        def render(processors, msg):
            record = logging.makeLogRecord({"msg": msg})  # a library's object, the project's to render into
            event = {"event": msg, "_record": record}
            for processor in processors:
                processor(event)
            record.msg = f"[info] {msg}"  # the formatter renders into its own record afterwards
            return logging.Formatter().format(record)  # and logging's formatter writes record.message

        def keep_copy(ed):
            COPIES.append(ed.copy())

        def keep_copy_copy(ed):
            COPY_COPIES.append(copy.copy(ed))

        def keep_librarys(ed):
            LIBRARY.append(ed.copy())

        def test_a_processor_keeps_a_copy_of_the_event():
            assert render([keep_copy], "hello") == "[info] hello"
            assert COPIES[0]["_record"].msg == "[info] hello"

        def test_a_processor_keeps_a_copy_copy_of_the_event():
            render([keep_copy_copy], "hi")
            assert COPY_COPIES[0]["_record"].message == "[info] hi"

        def test_a_librarys_callback_keeps_a_copy_of_its_event():
            mylib.emit(keep_librarys, "hey")
            assert LIBRARY[0]["_record"].msg == "[info] hey"
    """)
    assert flagged(result) == {"test_a_librarys_callback_keeps_a_copy_of_its_event"}, result.stdout.str()[-3000:]


def _counting_kept(monkeypatch: pytest.MonkeyPatch, calls: list[Any], what: Callable[[Any], Any]) -> None:
    """Count the marked code's calls of ``runtime.kept`` (``what`` of each value). The counter is compiled
    as the runtime's own code, so that the runtime's look for the marked frame (and its caller) skips
    it as it skips its own frames."""
    from aliascheck.boundary import runtime as boundary

    namespace: dict[str, Any] = {"real": boundary.kept, "calls": calls, "what": what}
    exec(compile("def kept(*a, **k):\n    calls.append(what(a[1]))\n    return real(*a, **k)\n",
                 boundary.__file__, "exec"), namespace)
    monkeypatch.setattr(boundary, "kept", namespace["kept"])


def test_a_project_callers_items_cost_no_runtime_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A parser's ``for token in tokens: result.append(token)`` called by the parser itself: from the
    second call on, the gate answers each item (the caller is known for the project's). Called from
    elsewhere (a library, a test outside the project), each item is the runtime's to look at."""
    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary

    path = str(tmp_path / "parser.py")
    calls: list[Any] = []
    _counting_kept(monkeypatch, calls, lambda value: value)
    _as_project(monkeypatch, path)
    namespace: dict[str, Any] = {"__name__": "parser"}
    exec(rewrite.compile_marked(textwrap.dedent('''
        def merge(tokens):
            result = []
            for token in tokens:
                result.append(token)
            result.append(tokens[0])
            return result

        def parse(n):
            tokens = [{"type": "text", "raw": str(i)} for i in range(n)]
            return [merge(tokens) for _ in range(3)]
    '''), path), namespace)
    boundary.start(None)
    try:
        boundary.begin()
        assert [len(r) for r in namespace["parse"](50)] == [51] * 3
        first = len(calls)
        assert first <= 2, calls  # the caller's first keeps, told once to the runtime
        namespace["merge"]([{"type": "text"}, {"type": "text"}])  # this test's frame: not the project's
        assert len(calls) == first + 3
    finally:
        boundary.stop()


def test_a_project_callers_argument_of_any_type_costs_no_runtime_call(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """``self._it = it`` in a constructor the project calls, of an iterator, a lock, a library's
    object: the first tells the runtime that the type is no array; later ones are the gate's alone
    (but the very object kept again at the line: a history of one object is the runtime's question).
    An array kept the same way is the runtime's every time (memory is its identity)."""
    import threading

    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary

    path = str(tmp_path / "peers.py")
    calls: list[Any] = []
    _counting_kept(monkeypatch, calls, lambda value: type(value).__name__)
    _as_project(monkeypatch, path)
    namespace: dict[str, Any] = {"__name__": "peers"}
    exec(rewrite.compile_marked(textwrap.dedent('''
        class Peer:
            def __init__(self, it, lock):
                self._it = it
                self._lock = lock

        def make(n, new):
            return [Peer(iter(range(3)), new()) for _ in range(n)]
    '''), path), namespace)
    boundary.start(None)
    try:
        boundary.begin()
        assert len(namespace["make"](50, threading.Lock)) == 50
        assert len(calls) <= 4, calls  # the first Peer's two keeps, told once each
        calls.clear()
        namespace["make"](3, lambda: np.zeros(2))
        assert calls.count("ndarray") == 3
    finally:
        boundary.stop()


def test_the_runtimes_builtins_name_leads_to_names_that_do_not_change_in_a_test() -> None:
    """Marked code reads the runtime through one builtins name. What it finds is a portal module of the
    runtime's functions, types, constants and flags: none of the tables that change at every marked
    statement, for a program's walk of builtins to meet (dill's ``__diff``); fingerprinted by name
    when a program keeps builtins' dict (dill's ``_create_function``); showing the runtime's current
    values after a session starts or stops; and holding every name the rewriter's shapes call."""
    import builtins
    import types

    from aliascheck.boundary import rewrite
    from aliascheck.boundary import runtime as boundary
    from aliascheck.fingerprint import fingerprint

    rewrite.expose()
    portal = vars(builtins)[rewrite.RUNTIME]
    assert portal is boundary.portal and isinstance(portal, types.ModuleType)
    assert "SEEN" not in vars(portal) and "QUIET" not in vars(portal)
    for shape in SHAPES:
        assert all(name in vars(portal) for name in shape.inserts), shape
    before = fingerprint({"builtins": portal})
    names = dict(vars(portal))
    boundary.start(None)
    try:
        assert portal._on is True and portal.loop is boundary.loop and portal.ADOPTING is boundary.ADOPTING
        boundary.SEEN[1] = boundary.NOLAST  # the runtime's tables change: the portal does not
        assert fingerprint({"builtins": portal}).digest == before.digest
        assert all(value is getattr(boundary, name) for name, value in vars(portal).items() if name in names
                   and not name.startswith("__"))
    finally:
        boundary.stop()
    assert portal._on is False


def test_a_line_keeping_a_new_large_value_each_turn_is_sampled_past_its_budget(pytester: pytest.Pytester) -> None:
    """lark's Earley forest visitor moves each node's growing list of children into its parent's: a
    line that keeps a new, ever larger value at each turn was fingerprinted in full at every keep and
    again at the next (50 s for one test of lark's suite, 0.24 s plain). Past its budget a site
    records a new object at its 2**k-th keep only: the fingerprints stay few, whatever the count. The
    same object kept again at the line (a history of one object) is still judged: flagged."""
    _count_fingerprints(pytester, "type(value) is list and len(value) > 100", "len(value)")
    result = run(pytester, """
        import types

        def test_growing_values():
            index, out, items = {}, [], []
            for i in range(2000):
                items = items + [types.SimpleNamespace(i=i)]  # a new list each turn, one item longer
                index[i] = items
                out.append(index[i])
            assert len(out[-1]) == 2000

        def test_one_object_kept_again_after_the_budget():
            index, out, items = {}, [], []
            for i in range(1200):
                if i < 1196:
                    items = items + [types.SimpleNamespace(i=i)]
                else:
                    items[0].i = -i  # the one object, written between its keeps at this line
                index[i] = items
                out.append(index[i])
    """)
    # Without sampling: one record and one judgement per keep of more than 100 items, about 3,800.
    count = len(_fingerprinted(result))
    assert count < 1200, result.stdout.str()[-2000:]
    assert flagged(result) == {"test_one_object_kept_again_after_the_budget"}, result.stdout.str()[-3000:]


def test_the_projects_own_object_stored_into_several_of_its_objects_is_not_a_history(
        pytester: pytest.Pytester, lib: None) -> None:
    """lark hands one callbacks table to every parser state it makes (``self.callbacks = callbacks``
    in each): the project sharing its own object among its own objects, on purpose, not one object
    kept again by one keeper. A library the project handed the table to adding to it changes what
    every state sees, as the project meant: nothing about the table is recorded (lark's suite
    fingerprinted it at every parse). Its twin, a library's callback storing the library's rows
    into a project object at each call, keeps the library's live value: flagged."""
    _count_fingerprints(pytester, "type(value) is dict and len(value) >= 40", "len(value)")
    result = run(pytester, """
        import mylib

        class State:
            def __init__(self, callbacks):
                self.callbacks = callbacks

        class Sink:
            def __init__(self):
                self.tables = []

            def __call__(self, rows):
                self.tables.append(rows)

        def test_one_table_in_each_state():
            callbacks = {f"rule{i}": print for i in range(40)}
            states = [State(callbacks) for _ in range(5)]
            mylib.register(callbacks, "extra")
            assert all(state.callbacks["extra"] is len for state in states)

        def test_a_librarys_rows_kept_by_a_callback():
            sink = Sink()
            mylib.batches(sink)
            assert sink.tables[0] is sink.tables[1]
    """)
    assert flagged(result) == {"test_a_librarys_rows_kept_by_a_callback"}, result.stdout.str()[-3000:]
    assert _fingerprinted(result) == [], result.stdout.str()[-3000:]


def test_a_dispatch_table_of_the_projects_own_methods_is_its_own(pytester: pytest.Pytester) -> None:
    """mistune's parsers build ``self._methods = {name: getattr(self, "parse_" + name) ...}`` at each
    construction: bound methods of the project's own object, a table the project built of its own
    parts, never recorded (mistune's suite fingerprinted 948 of them). A table of a library object's
    bound methods is still looked at."""
    _count_fingerprints(pytester, "type(value) is dict and len(value) >= 20", "sorted(value)[0]")
    result = run(pytester, """
        import collections

        NAMES = [f"rule{i:02}" for i in range(20)]

        class Parser:
            def __init__(self):
                self._methods = {name: getattr(self, "parse") for name in NAMES}

            def parse(self):
                return 1

        class Dispatch:
            def __init__(self, queue):
                self._methods = {"lib" + name: queue.append for name in NAMES}

        def test_tables():
            parsers = [Parser() for _ in range(3)]
            queue = collections.deque()
            dispatches = [Dispatch(queue) for _ in range(3)]
            assert parsers[0]._methods["rule00"]() == 1 and len(dispatches) == 3
    """)
    assert set(_fingerprinted(result)) == {"librule00"}, result.stdout.str()[-2000:]


def _count_fingerprints(pytester: pytest.Pytester, condition: str, record: str) -> None:
    """A conftest that counts the boundary runtime's fingerprints of values meeting *condition*
    (an expression of ``value``), noting *record* of each, and prints them at the run's end as
    ``fingerprinted: [...]``."""
    pytester.makeconftest(f"""
        from aliascheck.boundary import runtime

        CALLS = []
        real = runtime.fingerprint

        def counting(value, *args, **kwargs):
            if {condition}:
                CALLS.append({record})
            return real(value, *args, **kwargs)

        runtime.fingerprint = counting

        def pytest_terminal_summary(terminalreporter):
            terminalreporter.write_line(f"fingerprinted: {{CALLS!r}}")
    """)


def _fingerprinted(result: pytest.RunResult) -> list[Any]:
    match = re.search(r"^fingerprinted: (\[.*\])$", result.stdout.str(), re.M)
    assert match, result.stdout.str()[-2000:]
    return ast.literal_eval(match.group(1))


def test_a_kept_value_pickle_cannot_write_is_walked_within_bounds() -> None:
    """A library's nodes linked to their parents, deeper than pickle recurses (executing's AST nodes),
    fall back to the Python walk: bounded for a keep, and said to be cut (truncated), not read whole."""

    class Node:
        def __init__(self, parent: Any) -> None:
            self.parent, self.children = parent, []

    root = node = Node(None)
    for _ in range(5000):
        child = Node(node)
        node.children.append(child)
        node = child
    from aliascheck.boundary import runtime

    fp = runtime.fingerprint([root])
    assert not fp.exact and fp.truncated


def test_a_view_the_test_names_is_judged_at_its_last_read(pytester: pytest.Pytester) -> None:
    """A test's name holding a view of memory the training writes is judged where the test reads it for
    the last time: read after the training, a finding; read only before it, or never again, clean. A new
    list of new views bound once (``live = [p.detach() ...]``) is a handle: kept on purpose to compare
    with clones taken before the training, it is clean."""
    result = run(pytester, """
        import torch

        def model_and_step():
            torch.manual_seed(0)
            model = torch.nn.Linear(3, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.5)
            def step():
                opt.zero_grad()
                model(torch.ones(4, 3)).sum().backward()
                opt.step()
            return model, step

        def test_buggy_baseline_read_after_the_step():
            model, step = model_and_step()
            w0 = model.weight.detach().numpy()
            step()
            assert (w0 == model.weight.detach().numpy()).all()

        def test_view_read_before_the_step_only():
            model, step = model_and_step()
            w0 = model.weight.detach()
            total = float(w0.abs().sum())
            step()
            assert total > 0

        def test_view_never_read_again():
            model, step = model_and_step()
            w0 = model.weight.detach().numpy()
            step()
            assert model.weight.shape == (2, 3)

        def test_live_views_compared_with_clones():
            model, step = model_and_step()
            before = [p.detach().clone() for p in model.parameters()]
            live = [p.detach() for p in model.parameters()]
            step()
            assert all(not torch.equal(b, a) for b, a in zip(before, live))
    """)
    assert flagged(result) == {"test_buggy_baseline_read_after_the_step"}
