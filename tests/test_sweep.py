"""`aliascheck check PACKAGE`: discovery, per-class runs, skips, bad input, formats and exit codes."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from pathlib import Path

import pytest

pytest.importorskip("torchdata.nodes")

import aliascheck.sweep as sweep  # noqa: E402
from aliascheck.cli import ExitCode, main  # noqa: E402
from aliascheck.config import Options, factories  # noqa: E402

DATA = Path(__file__).parent / "data"
ALIASING = {"sweep_pkg.nodes.aliasing.History", "sweep_pkg.nodes.aliasing.Tally"}


@pytest.fixture(autouse=True)
def importable(monkeypatch, tmp_path):
    """tests/data and tmp_path importable, their modules forgotten afterwards; no thread may outlive a test."""
    before = set(sys.modules)
    threads = set(threading.enumerate())
    monkeypatch.syspath_prepend(str(DATA))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in set(sys.modules) - before:
        if name.split(".")[0] in ("sweep_pkg", "badpkg", "hangpkg", "emptypkg", "madepkg"):
            sys.modules.pop(name, None)
    assert set(threading.enumerate()) <= threads


def run(capsys, *args):
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *args):
    code, out, _ = run(capsys, *args, "--format", "json")
    return code, json.loads(out)


def statuses(data):
    return {c["name"]: c["status"] for c in data["classes"]}


def package(root: Path, name: str, files: dict[str, str]) -> None:
    for path, text in {"__init__.py": "", **files}.items():
        target = root / name / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))


NODE = """
    from torchdata.nodes import BaseNode

    class Fine(BaseNode):
        def __init__(self, n: int):
            super().__init__()
            self.n = n

        def reset(self, initial_state=None):
            super().reset(initial_state)
            self.i = 0 if initial_state is None else initial_state["i"]

        def next(self):
            if self.i > self.n + 4:
                raise StopIteration
            self.i += 1
            return self.i

        def get_state(self):
            return {"i": self.i}
"""


def test_the_sweep_flags_exactly_the_two_aliasing_nodes(capsys):
    code, data = run_json(capsys, "sweep_pkg")
    assert code == ExitCode.FINDINGS
    assert statuses(data) == {
        "sweep_pkg.files.Lines": "skipped",
        "sweep_pkg.good.Counter": "checked",
        "sweep_pkg.good.Scaled": "checked",
        "sweep_pkg.good.Window": "checked",
        "sweep_pkg.nodes.aliasing.History": "findings",
        "sweep_pkg.nodes.aliasing.Tally": "findings",
    }
    assert {b["owner"] for b in data["bugs"] if b["severity"] == "error"} == ALIASING
    # The test module was never imported (it raises); the private aliasing class was left out.
    assert data["private"] == ["sweep_pkg.nodes.aliasing._Scratch"]
    lines = next(c for c in data["classes"] if c["name"] == "sweep_pkg.files.Lines")
    assert lines["reason"].startswith("cannot build a value for `path: Path`")
    assert "@aliascheck.factory" in lines["reason"]


def test_a_kept_checkpoint_is_blamed_on_the_reset_that_kept_it(capsys):
    code, out, _ = run(capsys, "sweep_pkg", "--only", "Tally")
    assert code == ExitCode.FINDINGS
    assert "aliascheck [mutation]: sweep_pkg.nodes.aliasing.Tally.reset (" in out
    assert "keeps the state it was given; ['counts'][0] changed after the load" in out


def test_the_text_table_has_one_row_per_class_and_a_summary(capsys):
    code, out, _ = run(capsys, "sweep_pkg")
    assert code == 1
    table = out[out.index("\nclass "):].splitlines()[1:8]
    assert [row.split()[:2] for row in table[1:7]] == [
        ["sweep_pkg.files.Lines", "skipped"], ["sweep_pkg.good.Counter", "checked"],
        ["sweep_pkg.good.Scaled", "checked"], ["sweep_pkg.good.Window", "checked"],
        ["sweep_pkg.nodes.aliasing.History", "findings"], ["sweep_pkg.nodes.aliasing.Tally", "findings"],
    ]
    assert "built as Scaled(source=Source(5), factor=1)" in out
    assert "aliascheck check sweep_pkg: 6 classes (3 clean, 2 with findings, 1 skipped, 0 errors); 2 bugs (" in out


def test_include_private_checks_a_private_class(capsys):
    code, data = run_json(capsys, "sweep_pkg", "--include-private", "--only", "*Scratch")
    assert code == 1 and statuses(data) == {"sweep_pkg.nodes.aliasing._Scratch": "findings"}


def test_a_skipped_class_fails_only_with_strict(capsys):
    assert run(capsys, "sweep_pkg", "--only", "Lines")[0] == ExitCode.OK
    assert run(capsys, "sweep_pkg", "--only", "Lines", "--strict")[0] == ExitCode.FINDINGS


def test_the_good_nodes_alone_exit_0(capsys):
    code, data = run_json(capsys, "sweep_pkg.good")
    assert code == ExitCode.OK and set(statuses(data).values()) == {"checked"}
    assert all(c["schedules"] >= 2 for c in data["classes"])


def test_workers_check_classes_in_child_processes_with_the_same_verdicts(capsys):
    code, data = run_json(capsys, "sweep_pkg", "--workers", "2")
    assert code == 1
    assert {n for n, s in statuses(data).items() if s == "findings"} == ALIASING
    assert statuses(data)["sweep_pkg.files.Lines"] == "skipped"


def test_explore_shrinks_the_construction_and_prints_a_replay_test_that_fails(capsys, pytester):
    code, out, _ = run(capsys, "sweep_pkg", "--only", "Tally", "--explore", "8")
    assert code == 1
    assert "minimal failing schedule: snap=" in out and "built as Tally(source=Source(5), buckets=1)" in out
    test = out[out.index("# aliascheck: the minimal failing schedule"):]
    assert "aliascheck check sweep_pkg.nodes.aliasing --only Tally --schedule" in test
    pytester.syspathinsert(DATA)
    pytester.makepyfile(test_replay=test)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, errors=1)  # the resume holds; the fixture finds the kept state changed
    output = result.stdout.str()
    assert "owner:    sweep_pkg.nodes.aliasing.Tally" in output and "change:   ['counts'][0]" in output


def test_a_module_that_fails_to_import_is_one_skipped_entry_and_the_sweep_goes_on(capsys, tmp_path):
    package(tmp_path, "badpkg", {"broken.py": "import no_such_dependency_here\n", "fine.py": NODE})
    code, data = run_json(capsys, "badpkg")
    assert code == ExitCode.OK
    assert statuses(data) == {"badpkg.broken": "skipped", "badpkg.fine.Fine": "checked"}
    broken = data["classes"][0]
    assert broken["reason"] == "import failed: ModuleNotFoundError: No module named 'no_such_dependency_here'"
    assert broken["detail"].startswith("Traceback (most recent call last):")


def test_a_constructor_that_always_raises_is_skipped_with_the_last_exception(capsys, tmp_path):
    package(tmp_path, "badpkg", {"nodes.py": NODE + """
    class Picky(Fine):
        def __init__(self, n: int):
            raise RuntimeError(f"no {n}")
    """})
    code, data = run_json(capsys, "badpkg", "--only", "Picky")
    assert code == ExitCode.OK
    [picky] = data["classes"]
    assert picky["status"] == "skipped"
    assert picky["reason"].startswith("Picky(n=1) raised RuntimeError: no 1 (at badpkg/nodes.py:")


def test_a_node_that_hangs_is_an_error_and_the_sweep_goes_on(capsys, tmp_path):
    package(tmp_path, "hangpkg", {"nodes.py": NODE + """
    import threading

    RELEASE = threading.Event()

    class Hangs(Fine):
        def next(self):
            RELEASE.wait()
            return 0
    """})
    code, data = run_json(capsys, "hangpkg", "--timeout", "0.2")
    left = [t for t in threading.enumerate() if t.name.startswith("aliascheck-step-")]
    sys.modules["hangpkg.nodes"].RELEASE.set()  # let the abandoned stepping thread finish, then join it
    for thread in left:
        thread.join(10)
    assert code == ExitCode.FINDINGS
    assert statuses(data) == {"hangpkg.nodes.Fine": "checked", "hangpkg.nodes.Hangs": "error"}
    assert "stepping hangpkg.nodes:Hangs() timed out after 0.2s" in data["classes"][1]["reason"]


def test_a_target_without_node_classes_is_a_usage_error(capsys, tmp_path):
    package(tmp_path, "emptypkg", {"plain.py": "class NotANode:\n    pass\n"})
    code, out, err = run(capsys, "emptypkg")
    assert code == ExitCode.USAGE_ERROR and out == ""
    assert err.startswith("aliascheck check: error: no node classes in 'emptypkg': looked for concrete classes")
    assert err.count("\n") == 1
    assert run(capsys, "no_such_package_at_all")[0] == ExitCode.USAGE_ERROR


def test_a_decorated_factory_builds_a_class_the_sweep_cannot(capsys, tmp_path):
    package(tmp_path, "madepkg", {"nodes.py": NODE + """
    from pathlib import Path

    import aliascheck

    class FromFile(Fine):
        def __init__(self, path: Path):
            super().__init__(3)

    @aliascheck.factory
    def make() -> FromFile:
        return FromFile(Path("x"))
    """})
    code, data = run_json(capsys, "madepkg", "--only", "FromFile")
    assert code == ExitCode.OK
    [made] = data["classes"]
    assert (made["status"], made["built"]) == ("checked", "madepkg.nodes:make()")


def test_factories_come_from_pyproject_or_an_ini_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.aliascheck]\naliascheck_factories = ["a.b:make", "c:d"]\n')
    assert factories(str(tmp_path)) == ("a.b:make", "c:d")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "setup.cfg").write_text("[aliascheck]\naliascheck_factories =\n    a.b:make\n")
    assert factories(str(tmp_path)) == ("a.b:make",)


@pytest.mark.parametrize("fmt", ["github", "sarif"])
def test_github_and_sarif_report_one_entry_per_bug(capsys, fmt):
    code, out, _ = run(capsys, "sweep_pkg", "--format", fmt)
    assert code == 1
    if fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        assert {r["properties"]["owner"] for r in results} == ALIASING
    else:
        errors = [line for line in out.splitlines() if line.startswith("::error ")]
        assert len(errors) == 2 and all("sweep_pkg/nodes/aliasing.py" in e for e in errors)
        assert any(line.startswith("::notice ") and "Lines" in line for line in out.splitlines())


def test_the_sweep_api_runs_without_the_cli():
    done = sweep.sweep("sweep_pkg.nodes", Options(enabled=True))
    assert [(r.name, r.status) for r in done.results] == [(n, "findings") for n in sorted(ALIASING)]
    assert all(r.findings and r.seconds > 0 for r in done.results)
