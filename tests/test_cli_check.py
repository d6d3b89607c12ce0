"""`aliascheck check MODULE:FACTORY`: schedules, resume-equivalence, explore, formats and exit codes."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings

pytest.importorskip("torchdata.nodes")

import aliascheck.bugs as bugs  # noqa: E402
import aliascheck.check as check  # noqa: E402

# Imported here, before any test patches bugs.group: a module first imported while the patch is
# on would keep the patched function for the rest of this worker's tests (pytester in-process
# runs drop the modules they imported, so a later import may fall inside the patched window).
import aliascheck.jsonreport  # noqa: E402,F401
import aliascheck.report  # noqa: E402,F401
import aliascheck.sarifreport  # noqa: E402,F401
from aliascheck.cli import ExitCode, main, snippet  # noqa: E402
from aliascheck.config import Options  # noqa: E402
from aliascheck.findings import Finding  # noqa: E402
from aliascheck.fingerprint import Fingerprint  # noqa: E402
from aliascheck.kinds import KINDS  # noqa: E402

DATA = Path(__file__).parent / "data"
AC = str(Path(sys.executable).with_name("aliascheck"))


@pytest.fixture(autouse=True)
def factories(monkeypatch):
    """tests/data importable as top-level modules, forgotten afterwards; no thread may outlive a test."""
    before = set(sys.modules)
    threads = set(threading.enumerate())
    monkeypatch.syspath_prepend(str(DATA))
    yield
    for name in ("check_factories", "seed_source"):
        if name not in before:
            sys.modules.pop(name, None)
    assert set(threading.enumerate()) <= threads


def run(capsys, *args):
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *args):
    code, out, err = run(capsys, *args, "--format", "json")
    return code, json.loads(out)


def errors(data):
    return [f for f in data["findings"] if f["severity"] == "error"]


def test_the_buggy_prefetcher_exits_1_naming_owner_path_and_handover(capsys):
    code, out, _ = run(capsys, "check_factories:buggy")
    assert code == ExitCode.FINDINGS == 1
    assert out.startswith("aliascheck [mutation]: seed_source.MutableSource.get_state (tests/data/seed_source.py:24) "
                          "hands out live state; it changed after the handover\n")
    assert re.search(r"^  owner:    seed_source\.MutableSource \(\d+ instances\)$", out, re.M)
    assert "  let out:  tests/data/seed_source.py:24 in seed_source.MutableSource.get_state" in out
    assert "  shares:   MutableSource.state" in out
    assert "  change:   ['index']    0 -> 1" in out
    assert "  handover: torchdata/nodes/_populate_queue.py:" in out
    assert "  fix:      tests/data/seed_source.py:24: return a copy of state from MutableSource.get_state()" in out
    # The wrong resumes that follow are the mutation's consequence: not bugs of their own.
    assert out.count("aliascheck [") == 1 and "[resume]" not in out
    assert "aliascheck check check_factories:buggy: 4 schedules, 4 with findings;" in out
    assert "; 1 bug (" in out and " occurrences in 4 schedules), 0 warnings" in out


def test_the_fixed_prefetcher_exits_0(capsys):
    code, out, _ = run(capsys, "check_factories:fixed")
    assert code == ExitCode.OK
    assert out.startswith("aliascheck check check_factories:fixed: 4 schedules, 0 with findings;")
    assert "; no bugs, 0 warnings" in out


@pytest.mark.parametrize(("factory", "code"), [("buggy_loader", 1), ("fixed_loader", 0)])
def test_a_loader_wrapped_pipeline_is_checked_through_its_iterator(capsys, factory, code):
    got, data = run_json(capsys, f"check_factories:{factory}")
    assert got == code
    owners = {f["owner"] for f in errors(data) if f["kind"] == "mutation"}
    assert owners == ({"seed_source.MutableSource"} if code else set())


def test_json_findings_are_finding_to_json_and_name_the_schedule(capsys):
    code, data = run_json(capsys, "check_factories:buggy")
    assert code == 1
    assert data["target"] == "check_factories:buggy"
    assert data["schedules"][0] == "snap=0,1,3 ahead=4" and data["failing"] == data["schedules"]
    fields = {f.name for f in dataclasses.fields(Finding)}
    bugs = {bug["id"] for bug in data["bugs"]}
    for raw in data["findings"]:
        assert set(raw) == fields | {"bug"} and raw["bug"] in bugs
        assert Finding.from_json(raw).to_json() == {k: v for k, v in raw.items() if k != "bug"}
    mutation = next(f for f in data["findings"] if f["kind"] == "mutation")
    assert (mutation["owner"], mutation["path"]) == ("seed_source.MutableSource", "['index']")
    assert mutation["test"] == "check_factories:buggy [snap=0,1,3 ahead=4]"


def test_the_json_report_file_matches_the_json_format(capsys, tmp_path):
    report = tmp_path / "report.json"
    code, out, _ = run(capsys, "check_factories:buggy", "--schedule", "snap=1 ahead=2", "--report", str(report))
    assert code == 1 and "aliascheck [mutation]" in out
    assert json.loads(report.read_text())["schedules"] == ["snap=1 ahead=2"]


def test_github_format_prints_one_escaped_annotation_per_bug(capsys):
    code, out, _ = run(capsys, "check_factories:forgetful", "--format", "github")
    assert code == 1
    annotation, *rest = out.splitlines()  # one bug, however many schedules hit it
    head, _, message = annotation.partition("::aliascheck [resume]")
    assert head.startswith("::error file=") and ",title=aliascheck resume%3A " in head
    # The fix is in ForgetfulSource.reset(): the user's line, in the checkout.
    assert "check_factories.py,line=" in head
    assert "%0A  change:   item 1    1 -> 0%0A" in message
    assert rest[0].startswith("aliascheck check check_factories:forgetful:")


def test_a_restore_that_forgets_its_position_is_a_resume_finding(capsys):
    code, data = run_json(capsys, "check_factories:forgetful")
    assert code == 1
    [bug] = data["bugs"]  # one bug, whichever schedules hit it
    assert bug["occurrences"] == len(data["findings"]) == len(data["failing"]) >= 2
    finding = data["findings"][0]
    assert finding["kind"] == finding["check"] == "resume"
    assert finding["owner"] == "torchdata.nodes.prefetch.Prefetcher"
    assert (finding["path"], finding["before"], finding["after"]) == ("item 1", "1", "0")
    assert finding["handover"] == "state_dict() after 1 item"
    assert finding["hint"] == KINDS["resume"].hint


def test_a_resume_after_aliasing_points_at_the_mutation(capsys):
    _, data = run_json(capsys, "check_factories:buggy")
    resumes = [f for f in data["findings"] if f["kind"] == "resume"]
    assert resumes and {(f["hint"], f["severity"]) for f in resumes} == {(check.RESUME_AFTER_MUTATION, "info")}


@pytest.mark.parametrize(("factory", "code"), [("counter", 1), ("counter_fixed", 0)])
def test_a_plain_stateful_iterator_is_recorded_by_the_check_itself(capsys, factory, code):
    got, data = run_json(capsys, f"check_factories:{factory}")
    assert got == code
    mutations = [f for f in errors(data) if f["kind"] == "mutation"]
    assert {(f["owner"], f["path"], f["handover"]) for f in mutations} == (
        {("check_factories.Counter", "['seen']", check.OUR_CALL)} if code else set()
    )
    assert len([b for b in data["bugs"] if b["severity"] != "info"]) == code


def test_a_bare_source_is_stepped_in_place(capsys):
    code, out, _ = run(capsys, "check_factories:bare_source")
    assert code == 1 and f"handover: {check.OUR_CALL}" in out


@pytest.mark.parametrize("args", [
    ("check_factories:short",),
    ("check_factories:short_loader", "--schedule", "snap=3 ahead=2"),
])
def test_a_pipeline_that_runs_out_early_is_clean(capsys, args):
    """Snapshots past the end are skipped; one taken after the last item may restart (a Loader's next epoch)."""
    code, out, _ = run(capsys, *args)
    assert code == 0, out


def test_ignore_patterns_silence_a_path(capsys):
    _, data = run_json(capsys, "check_factories:buggy", "--ignore", "*index*")
    assert {f["kind"] for f in errors(data)} == {"resume"}  # the restore still goes wrong


def test_explore_shrinks_to_the_minimal_schedule_and_prints_a_runnable_test(capsys, pytester):
    code, out, _ = run(capsys, "check_factories:buggy", "--explore", "10")
    assert code == 1
    assert "aliascheck: minimal failing schedule: snap=0 ahead=1 prefetch_factor=1" in out
    assert '# rerun it:  aliascheck check check_factories:buggy --schedule "snap=0 ahead=1 prefetch_factor=1"' in out
    snippet = out[out.index("# aliascheck: the minimal failing schedule"):]
    pytester.makepyfile(**{name: (DATA / f"{name}.py").read_text() for name in ("seed_source", "check_factories")},
                        test_minimal=snippet)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1, errors=1)  # the resume assert, then the fixture's mutation finding
    result.stdout.fnmatch_lines(["*owner:    seed_source.MutableSource*", "*restored from the snapshot after 0 items*"])


@pytest.mark.parametrize(("factory", "schedule", "passed"), [
    ("fixed_loader", check.Schedule((0, 2), 3), True),
    ("forgetful", check.Schedule((1,), 1, (("prefetch_factor", 1),)), False),
])
def test_the_snippet_replays_a_schedule_faithfully(pytester, factory, schedule, passed):
    target = check.load(f"check_factories:{factory}")
    pytester.makepyfile(**{name: (DATA / f"{name}.py").read_text() for name in ("seed_source", "check_factories")},
                        test_replay=snippet(target, schedule))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(**({"passed": 1} if passed else {"failed": 1}))


def test_explore_on_a_fixed_pipeline_exits_0(capsys):
    code, out, _ = run(capsys, "check_factories:fixed", "--explore", "6")
    assert code == 0
    assert out.startswith("aliascheck check check_factories:fixed: explored ") and "0 with findings" in out


def test_explore_finds_a_resume_bug_past_the_first_snapshot(capsys):
    code, data = run_json(capsys, "check_factories:forgetful", "--explore", "10")
    assert code == 1
    assert data["minimal"] == "snap=1 ahead=1 prefetch_factor=1"
    assert "fresh.reset(state)" in data["snippet"]


@settings(max_examples=25, deadline=None)
@given(check.schedules(("prefetch_factor", "snapshot_frequency")))
def test_a_schedule_prints_as_its_own_schedule_flag(schedule):
    assert check.Schedule.parse(str(schedule), ("prefetch_factor", "snapshot_frequency")) == schedule


@pytest.mark.parametrize(("spec", "message"), [
    ("snap=x", "--schedule 'snap=x': invalid literal"),
    ("ahead=2", "snap needs at least one step"),
    ("snap=1 prefetch=2", "the factory takes no prefetch (knobs it takes: prefetch_factor)"),
    ("snap=1 snap=2", "expected KEY=VALUE words"),
])
def test_a_bad_schedule_is_a_usage_error(capsys, spec, message):
    code, out, err = run(capsys, "check_factories:buggy", "--schedule", spec)
    assert code == ExitCode.USAGE_ERROR and out == ""
    assert err.startswith("aliascheck check: error: ") and message in err


@pytest.mark.parametrize(("target", "message"), [
    ("no_such_module:factory", "cannot import 'no_such_module': No module named 'no_such_module'"),
    ("check_factories:", "expected MODULE:FACTORY"),  # with no colon at all it is a package sweep
    ("check_factories:missing", "module 'check_factories' has no attribute 'missing'"),
    ("check_factories:NOT_CALLABLE", "is not callable (it is of type int)"),
    ("check_factories:needs_args", "check_factories:needs_args(path) must be callable with no arguments"),
    ("check_factories:not_a_node", "returned a builtins.list, which is not a node: it has no state_dict()"),
    ("check_factories:same", "returned the same seed_source.MutableSource twice: FACTORY must build a fresh node"),
])
def test_a_usage_error_is_one_line_without_traceback(capsys, target, message):
    code, out, err = run(capsys, target)
    assert code == ExitCode.USAGE_ERROR
    assert out == "" and err.count("\n") == 1 and message in err


@pytest.mark.parametrize(("factory", "frame", "last"), [
    ("raises", "in raises", "check_factories:raises() raised RuntimeError: the factory's own bug"),
    ("broken", "in next", "stepping check_factories:broken() raised ValueError: item 3 is corrupt [schedule "),
])
@pytest.mark.parametrize("explore", [[], ["--explore", "5"]])
def test_an_exception_in_the_users_code_keeps_its_traceback(capsys, factory, frame, last, explore):
    code, _, err = run(capsys, f"check_factories:{factory}", *explore)
    assert code == ExitCode.FINDINGS
    assert err.startswith("Traceback (most recent call last):")
    assert "check_factories.py" in err and frame in err and "aliascheck/check.py" not in err
    assert err.splitlines()[-1].startswith(f"aliascheck check: {last}")


def _bug(findings):
    raise KeyError("oops")


@pytest.mark.parametrize(("name", "replacement", "error"), [
    ("group", _bug, "KeyError: 'oops'"),
    # Raised inside aliascheck while the user's node is being stepped: still ours, not the node's.
    ("fingerprint", Fingerprint.from_json, "AttributeError: 'int' object has no attribute 'get'"),
])
def test_an_aliascheck_bug_says_so_and_exits_3(capsys, monkeypatch, name, replacement, error):
    monkeypatch.setattr(bugs if name == "group" else check, name, replacement)
    code, _, err = run(capsys, "check_factories:fixed", "--schedule", "snap=1 ahead=1")
    assert code == ExitCode.INTERNAL_ERROR == 3
    assert error in err
    assert err.splitlines()[-1].startswith("aliascheck check: internal error: this is a bug in aliascheck")


def test_a_node_that_hangs_times_out_as_a_failure(capsys):
    import check_factories

    code, _, err = run(capsys, "check_factories:hangs", "--timeout", "0.2")
    left = [t for t in threading.enumerate() if t.name.startswith("aliascheck-step-")]
    check_factories.RELEASE.set()  # let the abandoned stepping thread finish, then join it
    for thread in left:
        thread.join(10)
    assert code == ExitCode.FINDINGS
    assert err == ("aliascheck check: stepping check_factories:hangs() timed out after 0.2s "
                   "(thread left running, daemon) [schedule snap=0,1,3 ahead=4]\n")
    assert left and not any(t.is_alive() for t in left)


def test_strict_turns_an_unproven_alias_into_an_error(capsys):
    code, data = run_json(capsys, "check_factories:buggy", "--ignore", "*index*", "--strict",
                          "--schedule", "snap=0 ahead=1")
    assert code == 1
    assert {f["kind"] for f in errors(data)} == {"alias", "resume"}


def test_every_thread_the_check_starts_is_joined(capsys):
    before = set(threading.enumerate())
    for args in (["check_factories:buggy"], ["check_factories:buggy_loader", "--explore", "3"]):
        run(capsys, *args)
    assert set(threading.enumerate()) == before


def test_shutdown_stops_nested_workers_outer_first():
    node = check.load("check_factories:buggy_loader").factory()
    it = iter(node)
    next(it)
    mapper = node.root._it  # the Prefetcher's worker
    assert mapper._thread.is_alive()
    check.shutdown(node)
    assert not mapper._thread.is_alive()


def test_the_check_api_runs_without_the_cli():
    target = check.load("check_factories:forgetful")
    assert target.knobs == ("prefetch_factor",) and target.style == check.Style(True, "reset")
    outcome = check.check(target, Options(enabled=True), [check.Schedule((2,), 1)])
    assert [f.path for f in outcome.errors] == ["item 2"]


def test_bare_commands_and_argparse_errors_map_to_exit_codes(capsys):
    assert main([]) == ExitCode.OK and "check" in capsys.readouterr().out
    assert main(["check"]) == ExitCode.USAGE_ERROR
    assert "required: TARGET" in capsys.readouterr().err
    assert main(["check", "m:f", "--explore", "0"]) == ExitCode.USAGE_ERROR
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3]


def test_the_console_script_end_to_end():
    """A missing module is one line and exit 2; the buggy factory, imported from the cwd, exits 1."""
    missing = subprocess.run([AC, "check", "no_such_module:f"], capture_output=True, text=True, timeout=120)
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr == (
        "aliascheck check: error: cannot import 'no_such_module': No module named 'no_such_module'\n"
    )
    buggy = subprocess.run([AC, "check", "check_factories:buggy", "--schedule", "snap=1 ahead=2"], cwd=DATA,
                           capture_output=True, text=True, timeout=120)
    assert buggy.returncode == 1, buggy.stderr
    assert "owner:    seed_source.MutableSource" in buggy.stdout
