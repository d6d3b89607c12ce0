"""`pytest --aliascheck` end to end on real torchdata pipelines, through pytester."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torchdata.nodes")

SOURCE = (Path(__file__).parent / "data" / "seed_source.py").read_text()

SEED = """
import pytest
from torchdata.nodes import Prefetcher
from seed_source import MutableSource


@pytest.mark.parametrize("run", range({runs}))
@pytest.mark.parametrize("prefetch", {prefetch})
def test_resume(run, prefetch):
    node = Prefetcher(MutableSource(10, copy={copy}), prefetch_factor=prefetch, snapshot_frequency=1)
    assert next(node) == 0
    state = node.state_dict()
    restored = Prefetcher(MutableSource(10, copy={copy}), prefetch_factor=prefetch, snapshot_frequency=1)
    restored.reset(state)
    assert next(restored) == 1
"""


def seed(pytester: pytest.Pytester, runs: int = 50, prefetch=(1, 3), copy: bool = False) -> None:
    pytester.makepyfile(seed_source=SOURCE, test_seed=SEED.format(runs=runs, prefetch=list(prefetch), copy=copy))


def report(pytester: pytest.Pytester, name: str = "report.json") -> dict:
    return json.loads((pytester.path / name).read_text())


def test_the_prefetcher_seed_fails_every_run_with_owner_and_path(pytester):
    seed(pytester)
    result = pytester.runpytest("--aliascheck", "--aliascheck-report=report.json", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=100)
    data = report(pytester)
    flagged = {f["test"] for f in data["findings"] if f["kind"] == "mutation" and f["severity"] == "error"}
    assert len(flagged) == 100
    for f in data["findings"]:
        assert f["owner"] == "seed_source.MutableSource"
        assert f["path"] == "['index']"
        assert int(f["after"]) > int(f["before"])
        assert f["handover"].startswith("torchdata/nodes/_populate_queue.py:")
    result.stdout.fnmatch_lines([
        "*aliascheck [[]mutation]: seed_source.MutableSource.get_state (seed_source.py:*) hands out live state; "
        "it changed after the handover",
        "*owner:    seed_source.MutableSource (*)",
        "*let out:  seed_source.py:* in seed_source.MutableSource.get_state",
        "*shares:   MutableSource.state",
        "*change:   [[]'index']    * -> *",
        "*handover: torchdata/nodes/_populate_queue.py:* (thread *_populate_queue*)",
        "*fix:      seed_source.py:*: return a copy of state from MutableSource.get_state(), not the live object",
        "*aliascheck: bugs*",
        "[[]mutation] seed_source.MutableSource.get_state (seed_source.py:*) hands out live state; *",
        "aliascheck: 100 tests, * handovers recorded, * checked: 1 bug (* occurrences in 100 tests), 0 warnings, *",
    ])



def test_a_source_that_returns_a_copy_is_clean_every_run(pytester):
    seed(pytester, copy=True)
    result = pytester.runpytest("--aliascheck", "--aliascheck-report=report.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=100)
    data = report(pytester)
    assert data["findings"] == []
    assert data["handovers"] > 200 and data["checked"] > 100
    assert "seed_source.MutableSource" in data["owners"]


def test_without_the_flag_the_plugin_is_dormant(pytester):
    seed(pytester, runs=3, prefetch=(3,), copy=True)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    assert "aliascheck:" not in result.stdout.str()


LOADER = """
from torchdata.nodes import Batcher, Loader, Prefetcher
from seed_source import MutableSource


def test_loader_resume():
    loader = Loader(Prefetcher(Batcher(MutableSource(40), batch_size=2), prefetch_factor=2))
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    again = Loader(Prefetcher(Batcher(MutableSource(40), batch_size=2), prefetch_factor=2))
    again.load_state_dict(state)
    next(iter(again))
"""


def test_a_loader_resume_over_an_aliasing_source_is_flagged(pytester):
    pytester.makepyfile(seed_source=SOURCE, test_loader=LOADER)
    result = pytester.runpytest("--aliascheck", "--aliascheck-report=report.json", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    owners = {f["owner"] for f in report(pytester)["findings"] if f["severity"] == "error"}
    assert owners == {"seed_source.MutableSource"}


def test_warn_mode_passes_and_warns(pytester):
    pytester.makepyfile(seed_source=SOURCE, test_loader=LOADER)
    # In a subprocess: in-process runs inherit this suite's "warnings are errors" filter.
    result = pytester.runpytest_subprocess("--aliascheck", "--aliascheck-mode=warn", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*AliascheckWarning: seed_source.MutableSource.get_state (seed_source.py:*) "
                                 "hands out live state; it changed after the handover*"])


def test_markers_and_ini_switch_checks_off(pytester):
    pytester.makepyfile(seed_source=SOURCE, test_loader=LOADER.replace("def test_loader_resume", (
        "import pytest\n\n@pytest.mark.no_aliascheck\ndef test_off():\n    test_loader_resume()\n\n\n"
        "@pytest.mark.aliascheck(ignore=['seed_source.MutableSource:*'])\n"
        "def test_ignored():\n    test_loader_resume()\n\n\n"
        "def test_loader_resume")))
    pytester.makeini("[pytest]\naliascheck = true\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_loader.py::test_loader_resume*"])


def test_an_invalid_mode_is_a_usage_error(pytester):
    pytester.makeini("[pytest]\naliascheck = true\naliascheck_mode = loud\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--aliascheck-mode must be one of fail, warn, not 'loud'*"])


FIXTURE = """
from torchdata.nodes import Prefetcher
from seed_source import MutableSource


def test_check_node_finds_it_explicitly(aliascheck):
    node = Prefetcher(MutableSource(20), prefetch_factor=1)
    next(node)
    node.state_dict()
    found = aliascheck.check_node(node, steps=3)
    assert [f.path for f in found if f.kind == "mutation"] == ["['index']"]


def test_watch_records_any_object(aliascheck):
    box = {"items": [1]}
    aliascheck.watch(box, owner="my-cache")
    keeper = [box]
    box["items"].append(2)
"""


@pytest.mark.parametrize("flag", [[], ["--aliascheck"]])
def test_the_fixture_works_with_and_without_the_flag(pytester, flag):
    pytester.makepyfile(seed_source=SOURCE, test_fixture=FIXTURE)
    result = pytester.runpytest(*flag, "-p", "no:cacheprovider")
    if flag:
        result.assert_outcomes(passed=0, failed=2)
    else:  # without the flag a fixture failure comes at teardown: an error
        result.assert_outcomes(passed=2, errors=2, failed=0)
    result.stdout.fnmatch_lines(["*owner:    my-cache",
                                 "*change:   [[]'items']    list grew from 1 to 2 items (appended 2)"])


def test_xdist_workers_report_into_one_json(pytester):
    seed(pytester, runs=6, prefetch=(2,))
    result = pytester.runpytest_subprocess(
        "--aliascheck", "--aliascheck-report=report.json", "-n", "2", "-p", "no:cacheprovider", "--timeout=60"
    )
    result.assert_outcomes(failed=6)
    data = report(pytester)
    assert len({f["test"] for f in data["findings"]}) == 6
    result.stdout.fnmatch_lines(["aliascheck: 6 tests, *"])


HYPOTHESIS = """
from hypothesis import given, settings, strategies as st
from torchdata.nodes import Prefetcher
from seed_source import MutableSource


@settings(max_examples=5, deadline=None)
@given(st.integers(1, 4))
def test_any_prefetch_factor(prefetch):
    node = Prefetcher(MutableSource(30, copy=True), prefetch_factor=prefetch)
    next(node)
    node.state_dict()
"""


def test_hypothesis_tests_run_clean(pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_ADDOPTS")  # with hypothesis's pytest plugin, as its users run it (conftest.py)
    pytester.makepyfile(seed_source=SOURCE, test_hyp=HYPOTHESIS)
    result = pytester.runpytest("--aliascheck", "-p", "no:cacheprovider", "--timeout=60")
    result.assert_outcomes(passed=1)


MAPPER = """
import pytest
from torchdata.nodes import ParallelMapper
from seed_source import MutableSource


@pytest.mark.parametrize("run", range(20))
@pytest.mark.parametrize("copy", [False, True])
def test_parallel_mapper_resume(run, copy):
    node = ParallelMapper(MutableSource(40, copy=copy), map_fn=lambda x: x, num_workers=2, method="thread")
    next(node)
    state = node.state_dict()
    again = ParallelMapper(MutableSource(40, copy=copy), map_fn=lambda x: x, num_workers=2, method="thread")
    again.reset(state)
    next(again)
"""


def test_parallel_mapper_threads_inherit_the_bug_and_are_flagged_every_run(pytester):
    pytester.makepyfile(seed_source=SOURCE, test_mapper=MAPPER)
    result = pytester.runpytest("--aliascheck", "--aliascheck-report=report.json", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=20, passed=20)
    flagged = {f["test"] for f in report(pytester)["findings"] if f["severity"] == "error"}
    assert flagged == {f"test_mapper.py::test_parallel_mapper_resume[False-{i}]" for i in range(20)}
