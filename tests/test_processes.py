"""Child processes under --aliascheck: a ledger in each, findings back through the spool (aliascheck.processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from aliascheck.config import Options
from aliascheck.findings import Finding
from aliascheck.spool import ENV, Spool

try:  # imported here, outside pytester's sys.modules snapshot: torch cannot be imported twice in a process
    import torchdata.nodes  # noqa: F401
    import torchdata.stateful_dataloader  # noqa: F401

    TORCHDATA = True
except ImportError:  # pragma: no cover - the torchdata extra is not installed
    TORCHDATA = False
needs_torchdata = pytest.mark.skipif(not TORCHDATA, reason="needs aliascheck[torchdata]")

RUN = ("--aliascheck", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning")

COUNTER = """
    import multiprocessing as mp
    import os, signal, subprocess, sys
    from concurrent.futures import ProcessPoolExecutor

    import pytest


    class Counter:
        def __init__(self):
            self.state = {"seen": []}

        def step(self, x):
            self.state["seen"].append(x)

        def state_dict(self):
            return self.state  # the live dict

        def load_state_dict(self, sd):
            self.state = {"seen": list(sd["seen"])}


    class Copying(Counter):
        def state_dict(self):
            return {"seen": list(self.state["seen"])}


    KEPT = []  # checkpoints kept in the worker


    def work(kind):
        c = Counter() if kind == "buggy" else Copying()
        c.step(1)
        KEPT.append(c.state_dict())
        c.step(2)
        return len(KEPT)
"""


def _counter(pytester: pytest.Pytester, body: str) -> None:
    pytester.makepyfile(test_children=textwrap.dedent(COUNTER) + textwrap.dedent(body))


def test_each_start_method_checks_its_children(pytester: pytest.Pytester) -> None:
    """fork, spawn and forkserver children record and report; the copying variant stays clean."""
    _counter(pytester, """
        @pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
        @pytest.mark.parametrize("kind", ["buggy", "fixed"])
        def test_process(method, kind):
            p = mp.get_context(method).Process(target=work, args=(kind,))
            p.start()
            p.join(60)
            assert p.exitcode == 0
    """)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=3, failed=3)
    for method, name in (("fork", "ForkProcess"), ("spawn", "SpawnProcess"), ("forkserver", "ForkServerProcess")):
        result.stdout.fnmatch_lines([f"FAILED *test_process[[]buggy-{method}[]]*"])
        result.stdout.fnmatch_lines([f"*process:  pid *, {name}-*"])
    result.stdout.fnmatch_lines(["*change:   [[]'seen'[]]    list grew from 1 to 2 items (appended 2)*"])
    result.stdout.fnmatch_lines(
        ["aliascheck: 6 tests, 6 handovers recorded, * checked: 1 bug (3 occurrences in 3 tests)*"])
    assert "fixed" not in "".join(line for line in result.outlines if line.startswith("FAILED"))


def test_pools_and_executors(pytester: pytest.Pytester) -> None:
    """A Pool left through ``with`` (terminate: SIGTERM) and a ProcessPoolExecutor: the worker's teardown runs."""
    _counter(pytester, """
        @pytest.mark.parametrize("kind", ["buggy", "fixed"])
        def test_pool(kind):
            with mp.get_context("fork").Pool(1) as pool:
                assert pool.map(work, [kind]) == [1]

        @pytest.mark.parametrize("kind", ["buggy", "fixed"])
        def test_executor(kind):
            with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as ex:
                assert ex.submit(work, kind).result() == 1
    """)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["FAILED *test_pool[[]buggy[]]*", "FAILED *test_executor[[]buggy[]]*"])
    result.stdout.fnmatch_lines(["*process:  pid *, ForkPoolWorker-*"])


def test_a_killed_child_loses_nothing_it_found(pytester: pytest.Pytester) -> None:
    """Each finding is flushed as it is made: a SIGKILLed worker's spool is still read."""
    _counter(pytester, """
        def found_then_killed():
            c = Counter()
            c.step(1)
            KEPT.append(c.state_dict())
            c.step(2)
            c.state_dict()  # the next handover sees the kept snapshot changed: spooled now
            os.kill(os.getpid(), signal.SIGKILL)

        def test_killed():
            p = mp.get_context("fork").Process(target=found_then_killed)
            p.start()
            p.join(60)
            assert p.exitcode == -signal.SIGKILL
    """)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*seen by:  the next handover of the same object (1)*"])


def test_a_python_subprocess_is_checked_too(pytester: pytest.Pytester) -> None:
    """subprocess.run([sys.executable, ...]): the startup hook begins its ledger; atexit runs its teardown."""
    _counter(pytester, """
        @pytest.mark.parametrize("kind", ["buggy", "fixed"])
        def test_subprocess(kind):
            code = f"import test_children; test_children.work({kind!r})"
            here = os.path.dirname(__file__)
            assert subprocess.run([sys.executable, "-c", code], cwd=here, timeout=60).returncode == 0
    """)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*process:  pid *", "FAILED *test_subprocess[[]buggy[]]*"])


def test_under_xdist_each_worker_reads_its_childrens_spools(pytester: pytest.Pytester) -> None:
    _counter(pytester, """
        @pytest.mark.parametrize("kind", ["buggy", "fixed", "buggy2", "fixed2"])
        def test_process(kind):
            p = mp.get_context("fork").Process(target=work, args=(kind.rstrip("2"),))
            p.start()
            p.join(60)
            assert p.exitcode == 0
    """)
    result = pytester.runpytest_subprocess(*RUN, "-n", "2", "--aliascheck-report=report.json")
    result.assert_outcomes(passed=2, failed=2)
    report = json.loads((pytester.path / "report.json").read_text())
    assert len(report["bugs"]) == 1
    tests = {f["test"] for f in report["findings"]}
    assert tests == {"test_children.py::test_process[buggy]", "test_children.py::test_process[buggy2]"}
    assert all(f["process"].startswith("pid ") for f in report["findings"])


PARALLEL_MAPPER = """
    import pytest
    from torchdata.nodes import IterableWrapper, Loader, ParallelMapper


    class Stats:
        def __init__(self, copying):
            self.copying, self.state = copying, {"seen": []}

        def state_dict(self):
            return {"seen": list(self.state["seen"])} if self.copying else self.state

        def load_state_dict(self, sd):
            self.state = {"seen": list(sd["seen"])}


    KEPT = []  # snapshots the map function keeps, in the worker


    def step(x, copying):
        s = Stats(copying)
        s.state["seen"].append(x)
        KEPT.append(s.state_dict())
        s.state["seen"].append(x + 1)
        return x


    def buggy(x):
        return step(x, False)


    def fixed(x):
        return step(x, True)


    @pytest.mark.parametrize("fn", [buggy, fixed])
    def test_process_mapper(fn):
        node = ParallelMapper(IterableWrapper(range(4)), map_fn=fn, num_workers=1, method="process",
                              multiprocessing_context="fork")
        assert sorted(Loader(node)) == [0, 1, 2, 3]
"""


@needs_torchdata
def test_parallel_mapper_process_workers_outliving_their_test(pytester: pytest.Pytester) -> None:
    """torchdata's ParallelMapper(method="process") leaves daemon workers running after the test: they
    are ended before the session reports, their findings go on the test that started them, and the run fails."""
    pytester.makepyfile(test_mapper=textwrap.dedent(PARALLEL_MAPPER))
    result = pytester.runpytest_subprocess(*RUN, "-W", "ignore::UserWarning")
    assert result.ret == 1  # the run fails whenever the workers' findings arrive
    result.stdout.fnmatch_lines([
        "[[]mutation[]] test_mapper.Stats.state_dict * (in ForkProcess-*)",
        "    test_mapper.py::test_process_mapper[[]buggy[]]",
    ])
    outcomes = result.parseoutcomes()
    # A worker writes a finding when its check runs: before the test ends (the test fails), or
    # after it (listed under the test that started it, and the run fails at its end). Which one
    # depends on how far the worker got; the verdict, the bug and its test do not.
    if outcomes.get("failed"):
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(["FAILED test_mapper.py::test_process_mapper[[]buggy[]]*"])
    else:
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(["*finding(s) from child processes that outlived their test*"])
    assert "test_process_mapper[fixed]" not in result.stdout.str()


STATEFUL_DATALOADER = """
    import pytest
    from torch.utils.data import IterableDataset
    from torchdata.stateful_dataloader import StatefulDataLoader


    class Progress(IterableDataset):
        def __init__(self, n, copying):
            self.n, self.copying = n, copying
            self.state = {"done": []}

        def __iter__(self):
            for i in range(len(self.state["done"]), self.n):
                self.state["done"].append(i)
                yield i

        def state_dict(self):
            return {"done": list(self.state["done"])} if self.copying else self.state

        def load_state_dict(self, state):
            self.state = {"done": list(state["done"])}


    @pytest.mark.parametrize("copying", [False, True])
    def test_checkpoint_in_worker(copying):
        loader = StatefulDataLoader(Progress(10, copying), batch_size=1, num_workers=1, snapshot_every_n_steps=1)
        it = iter(loader)
        assert [next(it).item() for _ in range(5)] == [0, 1, 2, 3, 4]
        state = loader.state_dict()
        del it
        done = state["_snapshot"]["_worker_snapshots"]["worker_0"]["dataset_state"]["done"]
        assert done == ([0, 1, 2, 3, 4] if copying else [])  # the live dict: torchdata's delta never sees growth
"""


@needs_torchdata
def test_stateful_dataloader_worker_hands_out_live_state(pytester: pytest.Pytester) -> None:
    """The dataset's state_dict() in a StatefulDataLoader worker: flagged, naming the dataset, path and worker."""
    pytester.makepyfile(test_sdl=textwrap.dedent(STATEFUL_DATALOADER))
    result = pytester.runpytest_subprocess(*RUN, "-W", "ignore::UserWarning")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*AliasFinding: test_sdl.Progress.state_dict * (in DataLoader worker 0)",
        "*change:   [[]'done'[]]    list grew *",
        "*process:  pid *, DataLoader worker 0*",
    ])


def test_another_interpreter_runs_unchecked_with_one_warning(pytester: pytest.Pytester) -> None:
    """A child that never loads aliascheck (an interpreter without the startup hook: here this one
    with ``-S``) runs as if --aliascheck were off, and the session says so once."""
    python = pytester.path / "python-without-hook"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    pytester.makepyfile(test_other=f"""
        import multiprocessing as mp

        def noop():
            pass

        def test_other_interpreter():
            ctx = mp.get_context("spawn")
            ctx.set_executable({str(python)!r})
            p = ctx.Process(target=noop)
            p.start()
            p.join(60)
            assert p.exitcode == 0
    """)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=1)
    lines = [line for line in result.outlines if "left no spool" in line]
    assert len(lines) == 1 and "ran without aliascheck" in lines[0], result.outlines


def test_the_hook_is_silent_without_the_variable() -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    done = subprocess.run([sys.executable, "-c", "import sys; print('aliascheck.child' in sys.modules)"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False" and done.stderr == ""


def test_a_bad_variable_or_spool_warns_once_and_the_child_runs(tmp_path) -> None:
    code = "print('ran')"
    bad = dict(os.environ, **{ENV: "{not json"})
    done = subprocess.run([sys.executable, "-c", code], env=bad, capture_output=True, text=True, timeout=60)
    assert done.stdout == "ran\n" and done.stderr.count("aliascheck: this child runs unchecked") == 1
    gone = json.dumps({"spool": str(tmp_path / "missing"), "options": {"enabled": True}, "plugins": []})
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **{ENV: gone}),
                          capture_output=True, text=True, timeout=60)
    assert done.stdout == "ran\n" and "cannot write the spool" in done.stderr


def _finding(test: str) -> dict:
    return {"finding": Finding(kind="mutation", owner="m.C", path="['a']", before="1", after="2", handover="m.py:3",
                               check="teardown", test=test).to_json()}


def test_spool_reads_what_it_can_and_names_what_it_cannot() -> None:
    spool = Spool(Options(enabled=True), [])
    try:
        good = spool.dir / "101.jsonl"
        good.write_text(json.dumps({"hello": "pid 101, ForkProcess-1"}) + "\n" + json.dumps(_finding("t1")) + "\n"
                        + '{"finding": {"kind": "mut')  # torn: the child was killed mid-write
        (spool.dir / "102.jsonl").write_text("not json\n" + json.dumps(_finding("t2")) + "\n")
        (spool.dir / "103.jsonl").mkdir()  # unreadable as a file
        found = spool.collect()
        assert sorted(f.test for f in found) == ["t1", "t2"]
        assert any("line 1 in the spool of child pid 102" in p for p in spool.problems)
        assert any("cannot read the spool of child pid 103" in p for p in spool.problems)
        with good.open("a") as fh:  # the rest of the torn line arrives: read from where it stopped
            fh.write('ation"}}\n')
        assert spool.collect() == [] and any("line 1 in the spool of child pid 101" in p for p in spool.problems)
        assert spool.collect() == []  # nothing is read twice
    finally:
        spool.close()
    assert not spool.dir.exists()


ADOPTING_DATASET = """
    import pytest
    from torch.utils.data import IterableDataset
    from torchdata.stateful_dataloader import StatefulDataLoader


    class Periodic(IterableDataset):
        def __init__(self, n):
            self.n, self.state = n, {"i": 0, "seen": []}

        def __iter__(self):
            while self.state["i"] < self.n:
                self.state["seen"].append(self.state["i"])
                self.state["i"] += 1
                yield self.state["i"]

        def state_dict(self):
            return {"state": {"i": self.state["i"], "seen": list(self.state["seen"])}}

        def load_state_dict(self, sd):
            self.state = sd["state"]  # adopts what it is given


    @pytest.mark.parametrize("workers", [1, 0])
    def test_resume(workers):
        loader = StatefulDataLoader(Periodic(8), batch_size=1, num_workers=workers)
        it = iter(loader)
        [next(it) for _ in range(3)]
        state = loader.state_dict()
        del it
        resumed = StatefulDataLoader(Periodic(8), batch_size=1, num_workers=workers)
        resumed.load_state_dict(state)
        assert [b.item() for b in resumed] == [4, 5, 6, 7, 8]
"""


@needs_torchdata
def test_a_forked_workers_adopted_state_is_its_own_copy(pytester: pytest.Pytester) -> None:
    """In a forked worker the adopted state is the worker's own copy: the frames and objects it
    inherited from the parent (the test, the loader that forked) never run again, and what it was
    started with is a message it received. With num_workers=0 the same load adopts the caller's
    checkpoint: still a finding (torchdata's TestFastStateDictRequestRoundRobin)."""
    pytester.makepyfile(test_adopt=textwrap.dedent(ADOPTING_DATASET))
    result = pytester.runpytest_subprocess(*RUN, "-W", "ignore::UserWarning")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED test_adopt.py::test_resume[[]0[]]*"])
    result.stdout.no_fnmatch_line("*worker 0*")


ADVANCING_IN_PLACE = """
    import os
    import aliascheck.sites as sites
    from torch.utils.data import IterableDataset
    from torchdata.stateful_dataloader import StatefulDataLoader

    WALKS = os.path.join(os.getcwd(), "walks")
    forked = sites.inherited


    def counted():  # asked once or twice by each look for holders in a forked child
        with open(WALKS, "a") as fh:
            fh.write(f"{os.getpid()}\\n")
        return forked()


    sites.inherited = counted  # inherited by the forked worker


    class Counter(IterableDataset):
        def __init__(self, n):
            self.n, self.state = n, {"i": 0}

        def __iter__(self):
            while self.state["i"] < self.n:
                self.state["i"] += 1  # advances the state it adopted, in place
                yield self.state["i"]

        def state_dict(self):
            return {"state": {"i": self.state["i"]}}

        def load_state_dict(self, sd):
            self.state = sd["state"]  # adopts what it is given


    def test_resume():
        loader = StatefulDataLoader(Counter(60), batch_size=1, num_workers=1)
        it = iter(loader)
        [next(it) for _ in range(5)]
        state = loader.state_dict()
        del it
        resumed = StatefulDataLoader(Counter(60), batch_size=1, num_workers=1)
        resumed.load_state_dict(state)
        assert [b.item() for b in resumed] == list(range(6, 61))
        with open(WALKS) as fh:
            walks = fh.read().split()
        assert 1 <= len(walks) <= 4, len(walks)
"""


@needs_torchdata
def test_a_forked_workers_adopted_state_advanced_in_place_is_walked_for_holders_once(
        pytester: pytest.Pytester) -> None:
    """The worker's dataset adopts its start state and advances it at every item. The first
    change, with nobody else holding the state, makes it the dataset's own: it is not walked for
    holders again at each of the 55 state calls (each walk scans the heap several times over: a
    torchdata suite test went from 1 s to 46 s)."""
    pytester.makepyfile(test_advance=textwrap.dedent(ADVANCING_IN_PLACE))
    result = pytester.runpytest_subprocess(*RUN, "-W", "ignore::UserWarning")
    result.assert_outcomes(passed=1)


def test_a_fork_outside_multiprocessing_falls_back_and_says_so_once(pytester: pytest.Pytester) -> None:
    """os.fork in the user's code: the forking frame goes on in the child, so which inherited frames
    are dead is unknown; today's rule holds there, and the summary says so once."""
    pytester.makepyfile(test_osfork=textwrap.dedent("""
        import os

        def test_fork_twice():
            for _ in range(2):
                pid = os.fork()
                if pid == 0:
                    os._exit(0)
                os.waitpid(pid, 0)
    """))
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=1)
    assert result.stdout.str().count("cannot tell which of the frames it inherited") == 1





def _alone(look):
    """*look*() run in a thread of its own: the frames the forward look starts from are then its
    own, not the test runner's (whose locals reach the whole session, more under xdist)."""
    import threading

    out = []
    worker = threading.Thread(target=lambda: out.append(look()))
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive() and len(out) == 1
    return out[0]


def _holders_both_ways(keep, skip):
    """_held_in_fork's answer for ``keep["state"]``, looked at forwards (from the callers' locals) and
    backwards (referrers). Never inside an assert: pytest's rewriting keeps its operands in locals."""
    import aliascheck.keepers as keepers

    forward = keepers._reached(keep["state"], set(skip) | {id(keep["state"])}, 10)
    looked = keepers._reached
    keepers._reached = lambda *args: None
    try:
        backward = keepers._held_in_fork(keep["state"], set(skip), modules=False)
    finally:
        keepers._reached = looked
    return forward, backward


def _shapes():
    import types

    keep = {"state": {"i": 1}}
    skip = {id(keep)}
    holder = {"a": [{"b": keep["state"]}]}  # held by a local through a dict, a list and a dict
    through_containers = _holders_both_ways(keep, skip)
    del holder
    passed_over = _holders_both_ways(keep, skip)  # only by a container passed over
    module = types.ModuleType("history")
    module.kept = [keep["state"]]  # a loaded state is not held by what a module reaches in a child
    through_a_module = _holders_both_ways(keep, skip)
    state = keep["state"]  # a local that is the state itself
    itself = _holders_both_ways(keep, skip)
    assert state is module.kept[0]
    return through_containers, passed_over, through_a_module, itself


def test_a_forked_childs_holders_are_the_same_looked_at_forwards_or_backwards():
    """The forward look from the running frames' locals answers as the walk back does: a chain
    from a local holds; one through a passed-over object (the owner's attributes, a module) or no
    chain at all does not. (Outside a fork every frame runs: the same look, with nothing dead.)"""
    through_containers, passed_over, through_a_module, itself = _alone(_shapes)
    assert through_containers == (True, True)
    assert passed_over == (False, False)
    assert through_a_module == (False, False)
    assert itself == (True, True)


def _capped():
    import aliascheck.keepers as keepers

    keep = {"state": {"i": 1}}
    wide = [{"n": i} for i in range(50)]  # a local reaching 50 containers, none of them the state
    within = keepers._reached(keep["state"], {id(keep)}, 10)
    huge = list(range(keepers.REACH_CAP + 1))  # a local with more parts than the cap: not looped over
    past_a_huge_local = keepers._reached(keep["state"], {id(keep)}, 10)
    del huge
    cap, keepers.REACH_CAP = keepers.REACH_CAP, 10
    try:
        past = keepers._reached(keep["state"], {id(keep)}, 10)
        walked_back = keepers._held_in_fork(keep["state"], {id(keep)}, modules=False)
    finally:
        keepers.REACH_CAP = cap
    assert len(wide) == 50
    return within, past_a_huge_local, past, walked_back


def test_the_forward_look_gives_up_past_its_cap_and_the_walk_back_answers():
    assert _alone(_capped) == (False, None, None, False)


def test_the_locks_a_sigterm_check_takes_can_be_taken_again_by_the_thread_it_interrupted() -> None:
    """A recording child's SIGTERM handler runs the teardown check in the main thread, between two of
    its instructions, maybe inside a section that holds one of aliascheck's locks (a message's
    receive): each lock the check may take is taken again by that thread at once. With a plain lock
    the worker waited forever and ``Pool.terminate()`` joined it until the test's timeout."""
    from aliascheck.plugins import caches, message_log
    from aliascheck.plugins import cloudpickle as cloudpickle_adapter

    import aliascheck.handlers as handlers
    import aliascheck.instrument as instrument

    for lock in (message_log._lock, caches._tables_lock, cloudpickle_adapter._lock, handlers._lock, instrument._lock):
        with lock:
            again = lock.acquire(blocking=False)
            assert again, lock
            lock.release()


def test_a_killed_sessions_spool_is_removed_by_the_next_session(pytester: pytest.Pytester) -> None:
    """A session killed before its end (SIGKILL, os._exit) cannot remove its spool; the next
    session on the machine removes the spools of sessions that no longer exist, and only those."""
    import tempfile
    from pathlib import Path

    pytester.makepyfile(test_dies="""
        import os, os.path

        def test_dies():
            with open("spool.txt", "w") as fh:
                fh.write(__import__("json").loads(os.environ["ALIASCHECK_CHILD"])["spool"])
            os._exit(0)
        """)
    pytester.runpytest_subprocess("--aliascheck", "-p", "no:cacheprovider")
    left = Path((pytester.path / "spool.txt").read_text())
    assert left.parent == Path(tempfile.gettempdir())
    assert left.is_dir()  # the session died before it could remove it
    living = Spool(Options(enabled=True), [])  # this process's own: alive, never swept
    try:
        pytester.makepyfile(test_dies="def test_fine():\n    pass\n")
        pytester.runpytest_subprocess("--aliascheck", "-p", "no:cacheprovider").assert_outcomes(passed=1)
        assert not left.exists() and living.dir.is_dir()
    finally:
        living.close()
