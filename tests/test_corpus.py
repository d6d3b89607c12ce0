"""The reproducer corpus: every entry's verdicts, metadata validation, the runner and its formats."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aliascheck import corpus
from aliascheck.config import match
from aliascheck.corpus import CorpusError, Entry, Expect, Variant
from aliascheck.errors import ExitCode

CORPUS = corpus.default_dir()
RUN = [sys.executable, "-m", "aliascheck", "corpus"]


# -- the corpus itself --------------------------------------------------------
def test_one_entry_of_each_family_gives_the_verdicts_it_expects() -> None:
    """The runner end to end on one entry per family (one test: xdist would run a shared fixture once
    per worker). Every entry's verdicts are README's main job, ``aliascheck corpus run``, which exits
    non-zero on any wrong verdict or a thread left running; CI runs it before these tests."""
    assert CORPUS is not None
    entries = corpus.discover(CORPUS)
    first = {}
    for entry in sorted(entries, key=lambda e: e.id):
        first.setdefault(entry.family, entry)
    chosen = list(first.values())
    assert {e.family for e in chosen} == set(corpus.FAMILIES)
    results = corpus.run(chosen, workers=2)
    wrong = [f"{r.entry} {r.variant}: expected {r.expected} {r.pattern}, got {r.got} {r.detail}"
             for r in results if not r.passed]
    assert wrong == []
    fixed = [r for r in results if r.variant == "fixed"]
    assert len(fixed) == len(chosen) and all(r.findings == [] for r in fixed)
    assert all(r.threads == [] for r in results)
    flagged = {r.entry for r in results if r.variant == "buggy" and r.got == "flag"}
    assert flagged == {e.id for e in chosen if e.variants["buggy"].expect.verdict == "flag"} != set()


def test_the_corpus_covers_every_family_with_cited_reports() -> None:
    assert CORPUS is not None
    entries = corpus.discover(CORPUS)
    assert len(entries) >= 15
    assert {e.family for e in entries} == set(corpus.FAMILIES)
    assert all(e.source.startswith("https://") and e.summary for e in entries)
    assert len({e.source for e in entries}) >= 12  # distinct reports, not one report many times


@pytest.mark.parametrize("entry_id", ["torchdata-prefetcher-periodic", "torch-load-assign",
                                      "cloudpickle-class-reset", "generic-mock-call-args"])
def test_a_buggy_variant_runs_as_plain_python_without_aliascheck(entry_id: str) -> None:
    assert CORPUS is not None
    script = CORPUS / entry_id / "buggy.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "aliascheck" not in proc.stdout


# -- a small corpus of our own -------------------------------------------------
BOX = """\
class Box:
    def __init__(self):
        self.items = []

    def state_dict(self):
        return {{"items": {returned}}}

    def load_state_dict(self, state):
        self.items = list(state["items"])


box = Box()
saved = box.state_dict()
box.items.append(1)
Box().load_state_dict(saved)
"""


def entry_toml(entry_id: str, buggy: str = 'expect = "flag"\nowner = "__main__.Box"\npath = "[\'items\']*"',
               fixed: str = 'expect = "clean"', extra: str = 'stateful = ["__main__:Box"]') -> str:
    return (f'id = "{entry_id}"\ntitle = "t"\nfamily = "generic"\nsource = "https://example.org/{entry_id}"\n'
            f'affected = "all"\nsummary = "s"\n{extra}\n[variants.buggy]\n{buggy}\n[variants.fixed]\n{fixed}\n')


def make_entry(root: Path, entry_id: str, toml: str | None = None, buggy: str | None = None,
               fixed: str = "pass\n", **files: str) -> Path:
    directory = root / entry_id
    directory.mkdir(parents=True)
    (directory / "entry.toml").write_text(entry_toml(entry_id) if toml is None else toml)
    (directory / "buggy.py").write_text(BOX.format(returned="self.items") if buggy is None else buggy)
    (directory / "fixed.py").write_text(fixed)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


@pytest.fixture
def small(tmp_path: Path) -> Path:
    make_entry(tmp_path, "box", fixed=BOX.format(returned="list(self.items)"))
    return tmp_path


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RUN, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_run_prints_a_table_and_exits_0_when_every_verdict_matches(small: Path) -> None:
    proc = cli("run", "--corpus", str(small), "-n", "2")
    assert proc.returncode == ExitCode.OK, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["entry", "variant", "expected", "got", "owner/path", "found", "seconds"]
    assert lines[2].split()[:6] == ["box", "buggy", "flag", "flag", "__main__.Box", "['items']"]
    assert lines[3].split()[:4] == ["box", "fixed", "clean", "clean"]
    assert lines[-1] == "corpus: 2 variants: 2 ok"
    assert "corpus: [2/2] box" in proc.stderr  # progress goes to stderr


def test_a_relative_corpus_directory_is_the_callers(small: Path) -> None:
    """``--corpus DIR`` relative to where the user runs it: the child processes start elsewhere."""
    proc = cli("run", "--corpus", small.name, cwd=small.parent)
    assert proc.returncode == ExitCode.OK, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "corpus: 2 variants: 2 ok"


def test_run_json_has_the_documented_schema(small: Path) -> None:
    proc = cli("run", "--corpus", str(small), "--format", "json")
    data = json.loads(proc.stdout)
    assert data["version"] == 1
    buggy, fixed = data["entries"]
    assert {"id", "variant", "expected", "got", "findings", "seconds"} <= set(buggy)
    assert (buggy["id"], buggy["variant"], buggy["expected"], buggy["got"]) == ("box", "buggy", "flag", "flag")
    (finding,) = buggy["findings"]
    assert (finding["kind"], finding["owner"], finding["path"], finding["after"]) == (
        "mutation", "__main__.Box", "['items']", "1 item")
    assert finding["detail"] == "list grew from 0 to 1 item (appended 1)"
    assert finding["test"] == "box::buggy"
    assert fixed["findings"] == [] and fixed["got"] == "clean"


def test_a_wrong_verdict_exits_1_and_says_what_was_wanted(tmp_path: Path) -> None:
    make_entry(tmp_path, "box", toml=entry_toml("box", buggy='expect = "flag"\nowner = "x.Other"\npath = "*"'))
    proc = cli("run", "--corpus", str(tmp_path))
    assert proc.returncode == ExitCode.FINDINGS
    assert "MISMATCH: wanted x.Other *" in proc.stdout


def test_a_hang_becomes_a_timeout_and_the_next_variant_still_runs(tmp_path: Path) -> None:
    make_entry(tmp_path, "hang", buggy="import threading\n\nthreading.Event().wait()\n",
               toml=entry_toml("hang", extra=""))
    proc = cli("run", "--corpus", str(tmp_path), "--timeout", "3", "--format", "json")
    assert proc.returncode == ExitCode.FINDINGS
    buggy, fixed = json.loads(proc.stdout)["entries"]
    assert (buggy["got"], buggy["detail"]) == ("timeout", "no verdict within 3 s")
    assert fixed["got"] == "clean"


def test_a_child_that_dies_costs_only_its_own_variant(tmp_path: Path) -> None:
    make_entry(tmp_path, "crash", buggy="import os\n\nos._exit(3)\n", toml=entry_toml("crash", extra=""))
    results = corpus.run(corpus.discover(tmp_path))
    assert [(r.got, r.status) for r in results] == [("error", "mismatch"), ("clean", "ok")]
    assert results[0].detail.startswith("the child process exited with 3")


def test_a_variant_that_raises_is_an_error_with_its_traceback(tmp_path: Path) -> None:
    make_entry(tmp_path, "boom", buggy="def f():\n    raise ValueError('no')\n\n\nf()\n",
               toml=entry_toml("boom", extra=""))
    (result, _) = corpus.run(corpus.discover(tmp_path))
    assert result.got == "error"
    assert "buggy.py" in result.detail and result.detail.endswith("ValueError: no")
    assert "runpy" not in result.detail and "corpus_child" not in result.detail


def test_a_missing_optional_module_skips_the_entry(tmp_path: Path) -> None:
    make_entry(tmp_path, "needs", toml=entry_toml("needs", extra='requires = ["no_such_module_for_aliascheck"]'))
    results = corpus.run(corpus.discover(tmp_path))
    assert [(r.got, r.status, r.passed) for r in results] == [("skip", "skip", True)] * 2
    assert results[0].detail == "needs no_such_module_for_aliascheck"


def test_a_thread_left_running_fails_the_variant(tmp_path: Path) -> None:
    script = ("import threading\n\nstop = threading.Event()\n"
              "threading.Thread(target=stop.wait, name='forgotten', daemon=True).start()\n")
    make_entry(tmp_path, "leak", fixed=script, toml=entry_toml("leak", extra=""),
               buggy=BOX.format(returned="self.items"))
    (_, fixed) = corpus.run(corpus.discover(tmp_path))
    assert (fixed.got, fixed.status, fixed.threads) == ("clean", "mismatch", ["forgotten"])


def test_variants_sharing_a_child_do_not_see_each_other(tmp_path: Path) -> None:
    """sys.argv, warning filters and an entry's own helper module are restored or forgotten."""
    for name, value in [("one", 1), ("two", 2)]:
        script = textwrap.dedent(f"""\
            import sys
            import warnings

            import helper

            assert helper.VALUE == {value}, helper.VALUE
            assert sys.argv[0].endswith("buggy.py") and sys.argv[1:] == []
            assert not any(f[0] == "ignore" and f[2] is UserWarning for f in warnings.filters)
            warnings.simplefilter("ignore", UserWarning)
            sys.argv.append("left over")
            """)
        make_entry(tmp_path, name, buggy=script, toml=entry_toml(name, buggy='expect = "clean"', extra=""),
                   **{"helper.py": f"VALUE = {value}\n"})
    results = corpus.run(corpus.discover(tmp_path))
    assert len(corpus.plan(corpus.discover(tmp_path))) == 1  # all four in one child
    assert [(r.got, r.status) for r in results] == [("clean", "ok")] * 4, [r.detail for r in results]


def test_a_known_gap_passes_as_gap_and_fails_once_it_closes(tmp_path: Path) -> None:
    gap = 'expect = "flag"\nowner = "x"\npath = "y"\ngap = "not seen yet"'
    make_entry(tmp_path, "open", buggy="pass\n", toml=entry_toml("open", buggy=gap, extra=""))
    make_entry(tmp_path, "closed", toml=entry_toml("closed", buggy=gap.replace('"x"', '"__main__.Box"')
                                                     .replace('"y"', '"*"')))
    results = {r.entry: r for r in corpus.run(corpus.discover(tmp_path)) if r.variant == "buggy"}
    assert (results["open"].status, results["open"].passed) == ("gap", True)
    assert (results["closed"].status, results["closed"].passed) == ("fixed-gap", False)


def test_a_hook_is_installed_around_the_variant(tmp_path: Path) -> None:
    hook = textwrap.dedent("""\
        def install(session):
            import builtins
            box = {"n": 0}
            builtins.watched_box = box
            session.ledger.watch(box, owner="hooked")

            def undo():
                del builtins.watched_box

            return undo
        """)
    make_entry(tmp_path, "hooked", buggy="import builtins\n\nkeeper = builtins.watched_box\nkeeper['n'] = 1\n",
               toml=entry_toml("hooked", buggy='expect = "flag"\nowner = "hooked"\npath = "[\'n\']"',
                               extra='hook = "hook.py"'), **{"hook.py": hook})
    buggy, fixed = corpus.run(corpus.discover(tmp_path))
    assert (buggy.status, buggy.detail) == ("ok", "hooked ['n']")
    assert fixed.status == "ok"


def test_list_and_show(small: Path) -> None:
    listed = cli("list", "--corpus", str(small))
    assert listed.returncode == 0 and listed.stdout.split()[:2] == ["box", "generic"]
    shown = cli("show", "box", "--corpus", str(small))
    assert shown.returncode == 0
    assert "source:   https://example.org/box" in shown.stdout
    assert "== buggy (buggy.py): expected flag __main__.Box ['items']*" in shown.stdout
    assert "return {\"items\": list(self.items)}" in shown.stdout  # the fixed variant's code


@pytest.mark.parametrize("args, message", [
    (["run", "nope"], "unknown entry id 'nope' (see: aliascheck corpus list)"),
    (["show", "nope"], "unknown entry id 'nope' (see: aliascheck corpus list)"),
    (["list", "--corpus", "/no/such/dir"], "--corpus /no/such/dir: no such directory"),
])
def test_a_usage_error_is_one_line_and_exit_2(small: Path, args: list[str], message: str) -> None:
    if "--corpus" not in args:
        args = [*args, "--corpus", str(small)]
    proc = cli(*args)
    assert proc.returncode == ExitCode.USAGE_ERROR
    assert proc.stderr.splitlines() == [f"aliascheck corpus: error: {message}"]
    assert proc.stdout == ""


def test_the_default_corpus_is_the_checkouts() -> None:
    assert CORPUS == Path(__file__).resolve().parent.parent / "corpus"
    assert cli("list").stdout.count("\n") == len(corpus.discover(CORPUS))


def test_the_subcommand_registers_on_any_argparse_parser() -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="aliascheck")
    corpus.add_subcommand(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["corpus", "run", "a", "b", "--family", "torch", "-n", "3", "--format", "json"])
    assert (args.ids, args.family, args.workers, args.format, args.run) == (
        ["a", "b"], "torch", 3, "json", corpus.handle)
    with pytest.raises(SystemExit):
        parser.parse_args(["corpus", "run", "-n", "0"])


def test_plan_shares_a_child_per_family_in_even_batches() -> None:
    def entry(entry_id: str, family: str, variants: int = 2) -> Entry:
        vs = {f"v{i}": Variant(f"v{i}", Path("x.py"), Expect("clean")) for i in range(variants)}
        return Entry(entry_id, Path(entry_id), "t", family, "https://x", "a", "s", vs)

    entries = [entry(f"t{i}", "torch") for i in range(4)] + [entry("c", "cloudpickle", 3)]
    batches = corpus.plan(entries)
    assert [len(b) for b in batches] == [4, 4, 3]  # 8 torch variants in two even batches, torch first
    assert {v[0].family for v in batches[0]} == {"torch"}
    assert [len(b) for b in corpus.plan(entries, isolate=True)] == [1] * 11


# -- judging ------------------------------------------------------------------
def finding(kind: str = "mutation", owner: str = "m.Owner", path: str = "['a'][0]",
            severity: str = "error") -> dict[str, str]:
    return {"kind": kind, "owner": owner, "path": path, "severity": severity}


@pytest.mark.parametrize("expect, findings, got, status", [
    (Expect("flag", "m.Owner", "['a'][0]"), [finding()], "flag", "ok"),
    (Expect("flag", "m.*", "['a']*", "mutation"), [finding()], "flag", "ok"),
    (Expect("flag", "m.Owner", "['b']"), [finding()], "flag", "mismatch"),
    (Expect("flag", "m.Owner", "*", "class-reset"), [finding()], "flag", "mismatch"),
    (Expect("flag", "m.Owner", "*"), [], "clean", "mismatch"),
    (Expect("warn", "m.Owner", "<root>"), [finding("alias", path="<root>", severity="warning")], "warn", "ok"),
    (Expect("clean"), [finding("alias", severity="warning")], "warn", "mismatch"),
    (Expect("clean"), [finding("unverifiable", severity="info")], "warn", "mismatch"),
    (Expect("clean"), [], "clean", "ok"),
    (Expect("flag", "m.Owner", "*", gap="later"), [], "clean", "gap"),
    (Expect("flag", "m.Owner", "*", gap="later"), [finding()], "flag", "fixed-gap"),
])
def test_judge(expect: Expect, findings: list[dict[str, str]], got: str, status: str) -> None:
    entry = Entry("e", Path("e"), "t", "generic", "https://x", "a", "s", {})
    result = corpus.judge(entry, Variant("buggy", Path("buggy.py"), expect),
                          {"state": "ok", "findings": findings, "seconds": 0.5})
    assert (result.got, result.status) == (got, status)


@pytest.mark.parametrize("state", ["error", "timeout"])
def test_a_failed_run_is_a_mismatch_even_with_a_known_gap(state: str) -> None:
    entry = Entry("e", Path("e"), "t", "generic", "https://x", "a", "s", {})
    variant = Variant("buggy", Path("buggy.py"), Expect("flag", "m.Owner", "*", gap="later"))
    result = corpus.judge(entry, variant, {"state": state, "error": "it broke"})
    assert (result.got, result.status, result.detail, result.passed) == (state, "mismatch", "it broke", False)


def test_brackets_in_patterns_are_literal() -> None:
    assert match("['index']", "['index']")
    assert not match("i", "['index']")
    assert match("['root']['source']['offset']", "*['offset']")


# -- metadata validation ------------------------------------------------------
GOOD = entry_toml("bad")


@pytest.mark.parametrize("toml, message", [
    (GOOD.replace('title = "t"\n', ""), "field 'title': missing"),
    (GOOD + "colour = 1\n", "field 'variants.fixed.colour': unknown"),
    (GOOD.replace('[variants.buggy]', 'colour = 1\n[variants.buggy]'), "field 'colour': unknown (known: id,"),
    (GOOD.replace('title = "t"', "title = 3"), "field 'title': must be str, not int"),
    (GOOD.replace('family = "generic"', 'family = "jax"'), "field 'family': must be one of torchdata, torch,"),
    (GOOD.replace('id = "bad"', 'id = "other"'), "field 'id': 'other' must equal the directory name 'bad'"),
    (GOOD.replace("https://example.org/bad", "example.org"), "field 'source': must be an https:// URL"),
    (GOOD.replace('owner = "__main__.Box"\n', ""), "field 'variants.buggy.owner': missing (a flag verdict"),
    (GOOD.replace('expect = "clean"', 'expect = "clean"\nowner = "x"'), "field 'variants.fixed.owner': a clean"),
    (GOOD.replace('expect = "flag"', 'expect = "broken"'), "field 'variants.buggy.expect': must be one of flag,"),
    (GOOD.replace('expect = "flag"', 'expect = "flag"\nkind = "oops"'), "field 'variants.buggy.kind': must be"),
    (GOOD.replace("[variants.fixed]\nexpect = \"clean\"\n", ""), "field 'variants.fixed': missing"),
    (GOOD.replace('expect = "clean"', 'expect = "clean"\nfile = "nope.py"'), "variants.fixed.file: nope.py does"),
    (GOOD.replace('stateful = ["__main__:Box"]', 'stateful = ["Box"]'), "field 'stateful': 'Box' is not of"),
    (GOOD.replace('stateful = ["__main__:Box"]', 'hook = "hook.py"'), "field 'hook': 'hook.py' does not exist"),
    (GOOD.replace('stateful = ["__main__:Box"]', "timeout = 0"), "field 'timeout': must be >= 1, not 0"),
    (GOOD.replace('stateful = ["__main__:Box"]', "steps = true"), "field 'steps': must be int, not bool"),
    (GOOD.replace('title = "t"', "title = "), "bad/entry.toml: not valid TOML"),
])
def test_invalid_metadata_names_the_entry_and_the_field(tmp_path: Path, toml: str, message: str) -> None:
    make_entry(tmp_path, "bad", toml=toml)
    with pytest.raises(CorpusError) as info:
        corpus.load_entry(tmp_path / "bad")
    assert str(info.value).startswith("bad/entry.toml: ")
    assert message in str(info.value)


def test_an_invalid_entry_is_a_usage_error_of_the_cli(tmp_path: Path) -> None:
    make_entry(tmp_path, "bad", toml=GOOD.replace('family = "generic"', 'family = "jax"'))
    proc = cli("list", "--corpus", str(tmp_path))
    assert proc.returncode == ExitCode.USAGE_ERROR
    assert proc.stderr.startswith("aliascheck corpus: error: bad/entry.toml: field 'family'")


# -- pytest corpus/ -----------------------------------------------------------
def test_pytest_collects_one_item_per_variant_and_a_gap_is_a_strict_xfail(pytester: pytest.Pytester) -> None:
    assert CORPUS is not None
    root = pytester.path / "corpus"
    root.mkdir()
    shutil.copy(CORPUS / "conftest.py", root / "conftest.py")
    make_entry(root, "box", fixed=BOX.format(returned="list(self.items)"))
    make_entry(root, "gap", buggy="pass\n", toml=entry_toml(
        "gap", buggy='expect = "flag"\nowner = "x"\npath = "y"\ngap = "not seen yet"', extra=""))
    make_entry(root, "wrong", toml=entry_toml("wrong", buggy='expect = "clean"'))
    result = pytester.runpytest_subprocess("corpus", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=4, failed=1, xfailed=1)
    result.stdout.fnmatch_lines([line.replace("[", "[[]") for line in [
        "*box/entry.toml::buggy PASSED*",
        "*gap/entry.toml::buggy XFAIL*known gap: not seen yet*",
        "*wrong buggy: expected clean",
        "*got flag: __main__.Box ['items']",
        "*[mutation] __main__.Box ['items']  0 items -> 1 item",
    ]])


def test_the_documented_install_leaves_no_entry_to_skip() -> None:
    """README's install (``.[all]`` with constraints.txt) brings every package an entry requires."""
    import importlib.util

    assert CORPUS is not None
    missing = {(e.id, name) for e in corpus.discover(CORPUS) for name in e.requires
               if importlib.util.find_spec(name) is None}
    assert not missing


# -- project variants: a directory run with python -m pytest --aliascheck ----------------------

PROJECT_MODULE = """\
class Box:
    def __init__(self):
        self.items = []

    def state_dict(self):
        return {{"items": {returned}}}

    def load_state_dict(self, state):
        self.items = list(state["items"])
"""

PROJECT_TEST = """\
from boxes.box import Box


def test_restore():
    box = Box()
    saved = box.state_dict()
    box.items.append(1)
    Box().load_state_dict(saved)
"""


def make_project(root: Path, variant: str, returned: str, test: str = PROJECT_TEST) -> None:
    project = root / variant
    (project / "src" / "boxes").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "boxes"\nversion = "0"\n\n[tool.pytest.ini_options]\n'
                                            'pythonpath = ["src"]\ntestpaths = ["tests"]\n')
    (project / "src" / "boxes" / "__init__.py").write_text("")
    (project / "src" / "boxes" / "box.py").write_text(PROJECT_MODULE.format(returned=returned))
    (project / "tests" / "test_box.py").write_text(test)


def test_a_project_variant_runs_from_its_own_directory_with_no_configuration(tmp_path: Path) -> None:
    directory = tmp_path / "box-project"
    directory.mkdir()
    (directory / "entry.toml").write_text(entry_toml("box-project", extra="",
                                                     buggy='expect = "flag"\nowner = "boxes.box.Box"\npath = "*"'))
    make_project(directory, "buggy", "self.items")
    make_project(directory, "fixed", "list(self.items)")
    entry = corpus.load_entry(directory)
    assert entry.variants["buggy"].project and entry.variants["buggy"].shown.name == "box.py"
    assert "self.items" in corpus.show(entry)
    results = corpus.run([entry])
    assert [(r.variant, r.got, r.status) for r in results] == [("buggy", "flag", "ok"), ("fixed", "clean", "ok")]


def test_a_project_whose_tests_cannot_run_is_an_error(tmp_path: Path) -> None:
    directory = tmp_path / "broken"
    directory.mkdir()
    (directory / "entry.toml").write_text(entry_toml("broken", extra=""))
    make_project(directory, "buggy", "self.items", test="import no_such_module_for_aliascheck\n")
    make_project(directory, "fixed", "list(self.items)")
    buggy, fixed = corpus.run([corpus.load_entry(directory)])
    assert (buggy.got, buggy.status) == ("error", "mismatch")
    assert "python -m pytest exited with 2" in buggy.detail
    assert fixed.got == "clean"
