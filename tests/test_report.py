"""One report per bug: grouping, the one producer's rules, machine outputs and bad input.

The reference case is issue 9's custom node: ``Shards.get_state()`` hands out a
shallow dict that still holds the live ``seen`` list, behind Batcher, Prefetcher
and Loader. It used to be 118 findings in 17 blocks; it is one bug.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

pytest.importorskip("torchdata.nodes")

from aliascheck.bugs import group  # noqa: E402
from aliascheck.cli import main  # noqa: E402
from aliascheck.config import Options  # noqa: E402
from aliascheck.diff import Change  # noqa: E402
from aliascheck.ledger import MAX_PATHS, MAX_TEXT, Ledger, Settings  # noqa: E402
from aliascheck.session import Session  # noqa: E402

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
AC = str(Path(sys.executable).with_name("aliascheck"))

SHARDS = '''\
import copy

from torchdata.nodes import BaseNode, Batcher, Loader, Prefetcher


class Shards(BaseNode):
    def __init__(self, n=40):
        super().__init__(); self.n = n; self.pos = {"shard": 0, "row": 0, "seen": []}
    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.pos = RESTORE if initial_state is not None else {"shard": 0, "row": 0, "seen": []}
    def next(self):
        i = self.pos["shard"] * 10 + self.pos["row"]
        if i >= self.n: raise StopIteration
        self.pos["row"] += 1
        if self.pos["row"] == 10: self.pos["shard"] += 1; self.pos["row"] = 0
        self.pos["seen"].append(i)
        return i
    def get_state(self):
        return {"shard": self.pos["shard"], "row": self.pos["row"], "seen": SEEN}

def build():
    return Loader(Prefetcher(Batcher(Shards(), batch_size=2), prefetch_factor=2))
'''
GET_STATE_LINE = 20
TEST_SHARDS = """
from mynodes import build


def test_resume_smoke():
    loader = build()
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    next(it)
    again = build()
    again.load_state_dict(state)
    next(iter(again))
"""


def shards(seen: str = 'self.pos["seen"]', restore: str = "copy.deepcopy(initial_state)") -> str:
    return SHARDS.replace("SEEN", seen).replace("RESTORE", restore)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A user's checkout with mynodes.py, importable, as the current directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    threads = set(threading.enumerate())

    def write(source: str) -> Path:
        (tmp_path / "mynodes.py").write_text(source)
        sys.modules.pop("mynodes", None)
        return tmp_path

    yield write
    sys.modules.pop("mynodes", None)
    assert set(threading.enumerate()) <= threads


def check(capsys, *args):
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


# -- the reference case ---------------------------------------------------------
def test_the_shards_bug_is_one_block_under_check_naming_the_line_and_the_live_list(project, capsys):
    project(shards())
    code, out, _ = check(capsys, "mynodes:build")
    assert code == 1
    blocks = [line for line in out.splitlines() if line.startswith("aliascheck [")]
    assert blocks == [f"aliascheck [mutation]: mynodes.Shards.get_state (mynodes.py:{GET_STATE_LINE}) hands out "
                      "live pos['seen']; it changed after the handover"]
    assert f"  let out:  mynodes.py:{GET_STATE_LINE} in mynodes.Shards.get_state" in out
    assert "  shares:   Shards.pos['seen']" in out
    assert "  change:   ['source']['seen']    list grew from 0 to " in out
    assert f"  fix:      mynodes.py:{GET_STATE_LINE}: return a copy of pos['seen'] from Shards.get_state()" in out
    summary = out.splitlines()[-2]
    assert summary.startswith("aliascheck check mynodes:build: 2 schedules, 2 with findings;")
    assert "; 1 bug (" in summary and " occurrences in 2 schedules), 0 warnings" in summary


def test_the_corrected_shards_are_clean_under_check(project, capsys):
    project(shards(seen='list(self.pos["seen"])'))
    code, out, _ = check(capsys, "mynodes:build")
    assert code == 0 and "; no bugs, 0 warnings" in out and "aliascheck [" not in out


def test_a_reset_that_keeps_the_callers_checkpoint_is_a_second_bug(project, capsys):
    """Issue 9's example also stores initial_state as its live position: a bug at another line."""
    project(shards(restore="initial_state"))
    code, out, _ = check(capsys, "mynodes:build")
    blocks = [line for line in out.splitlines() if line.startswith("aliascheck [")]
    assert code == 1 and len(blocks) == 2
    assert blocks[1].startswith("aliascheck [mutation]: mynodes.Shards.reset (mynodes.py:11) keeps the state "
                                "it was given; ")
    assert "  shares:   Shards.pos" in out


def test_verbose_lists_every_occurrence_under_its_bug(project, capsys):
    project(shards())
    _, out, _ = check(capsys, "mynodes:build", "--verbose")
    listed = [line for line in out.splitlines() if line.startswith("    - mynodes:build [snap=")]
    occurrences = int(out.split("; 1 bug (")[1].split(" occurrences")[0])
    assert len(listed) == occurrences > 1


def test_the_shards_bug_is_one_block_under_pytest_with_the_gist_in_the_short_summary(pytester):
    pytester.makepyfile(mynodes=shards(), test_mine=TEST_SHARDS)
    result = pytester.runpytest("--aliascheck", "-p", "no:cacheprovider", "-vv")
    result.assert_outcomes(failed=1)
    gist = (f"mynodes.Shards.get_state (mynodes.py:{GET_STATE_LINE}) hands out live pos['seen']; "
            "it changed after the handover")
    result.stdout.fnmatch_lines([f"FAILED test_mine.py::test_resume_smoke - aliascheck.errors.AliasFinding: "
                                 f"{gist.replace('[', '[[]')}"])
    text = result.stdout.str()
    assert text.count("    aliascheck [") == 1 and f"aliascheck [mutation]: {gist}" in text
    result.stdout.fnmatch_lines(["aliascheck: 1 tests, * checked: 1 bug (* occurrences in 1 test), 0 warnings, *"])


def test_a_bug_shared_by_several_tests_is_one_bug_in_the_terminal_summary(pytester):
    pytester.makepyfile(mynodes=shards(), test_mine=TEST_SHARDS + TEST_SHARDS.replace("smoke", "again"))
    result = pytester.runpytest("--aliascheck", "-p", "no:cacheprovider", "--aliascheck-verbose")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*aliascheck: bugs*",
        "[[]mutation] mynodes.Shards.get_state (mynodes.py:*) hands out live pos[[]'seen']; *",
        "    fix: mynodes.py:*: return a copy of pos[[]'seen'] from Shards.get_state(), not the live object",
        "    test_mine.py::test_resume_smoke",
        "    test_mine.py::test_resume_again",
        "aliascheck: 2 tests, * checked: 1 bug (* occurrences in 2 tests), 0 warnings, *",
    ])
    assert "    - test_mine.py::test_resume_smoke: " in result.stdout.str()  # verbose: the occurrences


# -- machine outputs ------------------------------------------------------------------
def sarif_validator():
    jsonschema = pytest.importorskip("jsonschema")
    return jsonschema.Draft4Validator(json.loads(SCHEMA.read_text()))


def test_check_sarif_is_valid_with_one_result_per_bug_at_the_users_line(project, capsys):
    project(shards())
    code, out, _ = check(capsys, "mynodes:build", "--format", "sarif")
    log = json.loads(out)
    assert code == 1 and list(sarif_validator().iter_errors(log)) == []
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "mutation" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "mynodes.py", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": GET_STATE_LINE}}


def test_partial_fingerprints_are_the_same_across_runs_and_checkouts(tmp_path):
    """Two checkouts in different directories, the node file moved down by a line in one: same fingerprint."""
    prints = []
    for name, source in (("a", shards()), ("b", "\n" + shards()), ("a", shards())):
        checkout = tmp_path / name
        checkout.mkdir(exist_ok=True)
        (checkout / "mynodes.py").write_text(source)
        proc = subprocess.run([AC, "check", "mynodes:build", "--format", "sarif"], cwd=checkout,
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 1, proc.stderr
        prints.append([r["partialFingerprints"] for r in json.loads(proc.stdout)["runs"][0]["results"]])
    assert prints[0] == prints[1] == prints[2] and len(prints[0]) == 1


def test_github_format_is_one_annotation_per_bug_at_the_users_line(project, capsys):
    project(shards())
    _, out, _ = check(capsys, "mynodes:build", "--format", "github")
    annotations = [line for line in out.splitlines() if line.startswith("::")]
    assert len(annotations) == 1
    assert annotations[0].startswith(f"::error file=mynodes.py,line={GET_STATE_LINE},title=aliascheck mutation%3A ")


def test_pytest_sarif_and_json_v2_reports(pytester):
    pytester.makepyfile(mynodes=shards(), test_mine=TEST_SHARDS)
    result = pytester.runpytest("--aliascheck", "-p", "no:cacheprovider", "--aliascheck-sarif=out.sarif",
                                "--aliascheck-report=out.json")
    result.assert_outcomes(failed=1)
    log = json.loads((pytester.path / "out.sarif").read_text())
    assert list(sarif_validator().iter_errors(log)) == [] and len(log["runs"][0]["results"]) == 1
    data = json.loads((pytester.path / "out.json").read_text())
    assert data["version"] == 2
    (bug,) = data["bugs"]
    assert bug["occurrences"] == len(data["findings"]) and {f["bug"] for f in data["findings"]} == {bug["id"]}
    assert (bug["kind"], bug["owner"], bug["shares"]) == ("mutation", "mynodes.Shards", "Shards.pos['seen']")
    assert bug["location"] == {"file": "mynodes.py", "line": GET_STATE_LINE}
    assert bug["tests"] == ["test_mine.py::test_resume_smoke"]


# -- ignore patterns: one rule for every kind ---------------------------------------------
class Counter:
    def __init__(self):
        self.state = {"counts": {"a": 0}}

    def state_dict(self):
        return self.state


def _session(ignore=()):
    session = Session(Options(enabled=True, ignore=tuple(ignore)))
    session.start()
    session.begin_test("t")
    return session


def _kinds(session, steps=0):
    try:
        return [(f.kind, f.path) for f in session.end_test(steps)]
    finally:
        session.stop()


def _mutation(session):
    kept = {"counts": {"a": 0}}
    session.ledger.watch(kept, owner="cache")
    kept["counts"]["a"] = 1


def _alias(session):
    from aliascheck.instrument import instrument

    undo = instrument(Counter)
    try:
        c = Counter()
        session.keep = c.state_dict()
    finally:
        undo()


def _unverifiable(session):
    session.ledger.watch({"lock": threading.Lock()}, owner="cache")


def _class_reset(session):
    cloudpickle = pytest.importorskip("cloudpickle")
    import aliascheck.plugins.cloudpickle as adapter

    undo = adapter.aliascheck_install(session.options)
    try:
        klass = type("Dyn", (), {"counts": {"a": 0}})
        klass.__module__ = "__main__"
        saved = cloudpickle.dumps(klass)
        klass.counts = {"a": 1}
        cloudpickle.loads(saved)
    finally:
        undo()


def _fresh_class(session):
    cloudpickle = pytest.importorskip("cloudpickle")
    from aliascheck import fresh

    klass = type("Dyn", (), {"counts": {"a": 0}})
    klass.__module__ = "__main__"
    saved = cloudpickle.dumps(klass)
    klass.counts = {"a": 1}
    session.keep = klass
    fresh.compare(saved)


@pytest.mark.parametrize(("make", "kind", "path"), [
    (_mutation, "mutation", "['counts']['a']"),
    (_alias, "alias", "<root>"),
    (_unverifiable, "unverifiable", "['lock']"),
    (_class_reset, "class-reset", "counts['a']"),  # issue 9: brackets were a character class here
    (_fresh_class, "fresh-class", "counts['a']"),
])
def test_an_ignore_pattern_silences_every_kind_alike(make, kind, path):
    session = _session()
    make(session)
    assert (kind, path) in _kinds(session)
    for ignore in (path, f"*:{path}", f"*{path[-5:]}", f"{path[:-3]}?{path[-2:]}"):
        session = _session([ignore])
        make(session)
        assert kind not in {k for k, _ in _kinds(session)}, ignore
    session = _session([f"x{path}", f"{path}x"])  # patterns that do not match: still reported
    make(session)
    assert (kind, path) in _kinds(session)


def test_a_bracket_is_literal_for_every_kind_not_a_character_class():
    led = Ledger(Settings(ignore=("counts['a']",)))
    led.begin("t")
    for kind in ("mutation", "alias", "class-reset", "unverifiable", "fresh-class", "resume"):
        assert led.report(kind, [Change("counts['a']", "1", "2")], owner="m.C", check="c") == []
        assert led.report(kind, [Change("counts[a]", "1", "2")], owner="m.C", check="c") != []
        assert led.report(kind, [Change("countsa", "1", "2")], owner="m.C", check="c") != []


def test_a_resume_finding_obeys_ignore_patterns(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "data"))
    code, out, _ = check(capsys, "check_factories:forgetful", "--schedule", "snap=1 ahead=2")
    assert code == 1 and "aliascheck [resume]" in out
    code, out, _ = check(capsys, "check_factories:forgetful", "--schedule", "snap=1 ahead=2", "--ignore", "item *")
    assert code == 0 and "aliascheck [" not in out
    for name in ("check_factories", "seed_source"):
        sys.modules.pop(name, None)


def test_the_producer_caps_paths_counts_stats_and_names_the_test():
    led = Ledger()
    led.begin("the test")
    found = led.report("mutation", [Change(f"[{i}]", "0", "1") for i in range(MAX_PATHS + 5)], owner="m.C",
                       check="teardown")
    assert len(found) == MAX_PATHS and found[-1].more == 5 and {f.test for f in found} == {"the test"}
    assert led.stats.flagged == 1 and list(led.findings) == found


# -- bad input ---------------------------------------------------------------------
def test_an_unknown_format_is_a_usage_error_listing_the_choices(capsys):
    code, _, err = check(capsys, "m:f", "--format", "xml")
    assert code == 2
    assert "invalid choice: 'xml' (choose from" in err and "'sarif'" in err


def test_an_unwritable_report_is_one_line_and_the_outcome_and_other_outputs_stand(project, capsys, tmp_path):
    project(shards())
    code, out, err = check(capsys, "mynodes:build", "--report", str(tmp_path / "no" / "such" / "r.json"),
                           "--sarif", "ok.sarif")
    assert code == 1 and "aliascheck [mutation]" in out
    assert err.splitlines() == [f"aliascheck: error: cannot write {tmp_path}/no/such/r.json: No such file or directory"]
    assert json.loads(Path("ok.sarif").read_text())["version"] == "2.1.0"


def test_an_unwritable_sarif_path_under_pytest_keeps_the_outcome_and_the_json(pytester):
    pytester.makepyfile(mynodes=shards(seen='list(self.pos["seen"])'), test_mine=TEST_SHARDS)
    result = pytester.runpytest("--aliascheck", "-p", "no:cacheprovider", "--aliascheck-sarif=no/such/dir/x.sarif",
                                "--aliascheck-report=out.json")
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["aliascheck: error: cannot write no/such/dir/x.sarif: No such file or directory"])
    assert json.loads((pytester.path / "out.json").read_text())["version"] == 2


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


def test_values_that_cannot_be_rendered_are_cut_or_named_by_type_never_a_crash():
    led = Ledger()
    led.begin("t")
    (finding,) = led.report("unverifiable", [Change("x", Unprintable(), "y" * 10_000_000)], owner="m.C", check="c")
    assert finding.before.startswith("<Unprintable")
    assert len(finding.after) == MAX_TEXT and finding.after.endswith("...")
    from aliascheck.report import render

    assert "could not be checked (<Unprintable" in render([finding])


def test_a_10mb_string_in_a_snapshot_is_shown_cut():
    session = _session()
    kept = {"blob": "a" * 10_000_000}
    session.ledger.watch(kept, owner="cache")
    kept["blob"] = "b" * 10_000_000
    (finding,) = session.end_test(0)
    session.stop()
    assert finding.path == "['blob']" and len(finding.before) < 100 and len(finding.after) < 100


def test_a_node_whose_exception_cannot_be_printed_is_a_note_not_a_crash():
    class Bad(Exception):
        def __str__(self) -> str:
            raise RuntimeError("unprintable")

    class Node:
        def __next__(self):
            raise Bad

    session = _session()
    (note,) = session.step_roots([Node()], 2)
    session.stop()
    assert note.kind == "unverifiable" and note.after == "stepping raised Bad: <unprintable>"
    assert group([note])[0].kind == "unverifiable"


def test_the_golden_regen_script_runs_from_a_copy_of_the_checkout(tmp_path):
    """The one documented command, in a scratch copy (it rewrites the files it owns)."""
    root = Path(__file__).resolve().parent.parent
    copy = tmp_path / "checkout"
    for part in ("tests/golden", "corpus/torchdata-prefetcher-periodic", "corpus/cloudpickle-class-reset",
                 "corpus/torch-best-state-dict"):
        shutil.copytree(root / part, copy / part)
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "tests/golden/regen.py"], cwd=copy, capture_output=True, text=True,
                          timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "findings; wrote findings.json" in proc.stdout
    text = (copy / "tests/golden/text.txt").read_text()
    assert text.count("aliascheck [") == 5, textwrap.shorten(text, 400)
