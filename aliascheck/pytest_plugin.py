"""pytest entry point: options, markers, the ``aliascheck`` fixture; dormant without ``--aliascheck``.

With the flag, a :class:`~aliascheck.session.Session` is registered (as xdist
registers ``DSession`` only when distributing). This module imports nothing of
aliascheck's core at import time: pytest loads it for every run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .session import Session

SESSION_KEY = pytest.StashKey["Session"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("aliascheck", "snapshot aliasing detection")
    group.addoption("--aliascheck", action="store_true", default=False,
                    help="record every handed-over snapshot and fail tests whose snapshots changed afterwards")
    group.addoption("--aliascheck-steps", dest="aliascheck_steps", type=int, default=None,
                    help="how many items to step each root node ahead after the test body (default 4)")
    group.addoption("--aliascheck-strict", dest="aliascheck_strict", action="store_true", default=False,
                    help="fail on aliases that stepping did not turn into a change, too")
    group.addoption("--aliascheck-mode", dest="aliascheck_mode", choices=("fail", "warn"), default=None,
                    help="fail tests with findings (default), or only warn")
    group.addoption("--aliascheck-report", dest="aliascheck_report", metavar="PATH", default=None,
                    help="write bugs, every occurrence and the counters as JSON to PATH")
    group.addoption("--aliascheck-sarif", dest="aliascheck_sarif", metavar="PATH", default=None,
                    help="write a SARIF 2.1.0 log (one result per bug) to PATH, for code scanning")
    group.addoption("--aliascheck-discover", dest="aliascheck_discover", choices=("project", "all", "off"),
                    default=None, help="classes with a state protocol watched with no configuration: those of "
                    "the project (default, not installed packages), all, or off")
    group.addoption("--aliascheck-boundary", dest="aliascheck_boundary", choices=("on", "off"), default=None,
                    help="mark the project's keep sites and shallow copies at import, and judge what they kept "
                    "(default on)")
    group.addoption("--aliascheck-verbose", dest="aliascheck_verbose", action="store_true", default=False,
                    help="list every occurrence of each bug, not just the bug")
    parser.addini("aliascheck", "enable aliascheck (like --aliascheck)", type="bool", default=False)
    parser.addini("aliascheck_steps", "default for --aliascheck-steps", default="4")
    parser.addini("aliascheck_strict", "like --aliascheck-strict", type="bool", default=False)
    parser.addini("aliascheck_mode", "default for --aliascheck-mode", default="fail")
    parser.addini("aliascheck_verbose", "like --aliascheck-verbose", type="bool", default=False)
    parser.addini("aliascheck_discover", "default for --aliascheck-discover", default="project")
    parser.addini("aliascheck_boundary", "default for --aliascheck-boundary", default="on")
    parser.addini("aliascheck_ignore", "path patterns (fnmatch; 'Owner:path' or path) never reported",
                  type="linelist", default=[])
    parser.addini("aliascheck_disable", "adapters to leave out (torchdata, torch, cloudpickle, dill, generic, all)",
                  type="linelist", default=[])
    parser.addini("aliascheck_allow_class_update", "classes (module.Qualname patterns) loads may update",
                  type="linelist", default=[])
    parser.addini("aliascheck_stateful", "classes outside the project (module:Qualname) to watch as well",
                  type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "aliascheck(steps=N, ignore=[patterns]): per-test aliascheck settings")
    config.addinivalue_line("markers", "no_aliascheck: do not check this test")
    from .config import from_pytest
    from .errors import UsageError

    try:
        options = from_pytest(config)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not options.enabled:
        return
    _import_unrewritten(config)
    # What the end of a test uses, imported now: a module first imported during the run would be
    # new objects in the middle of the user's tests (a test counting gc.get_objects() sees them).
    import aliascheck.harness  # noqa: F401
    import aliascheck.report  # noqa: F401

    from .session import Session

    session = Session(options)
    session.start(children=True)
    config.stash[SESSION_KEY] = session
    config.add_cleanup(session.stop)
    config.pluginmanager.register(SessionPlugin(session, config), "aliascheck-session")


class _Unrewritten(importlib.abc.MetaPathFinder):
    """Finds aliascheck's own modules ahead of pytest's assertion rewriter: they import as installed.

    pytest rewrites every module of a package that registers a ``pytest11`` entry point
    (documented in pytest's "Writing plugins", *Assertion Rewriting*), so aliascheck's whole
    core would be parsed and rewritten at each ``--aliascheck`` run, and compiled afresh
    wherever the rewritten bytecode cannot be written (``PYTHONDONTWRITEBYTECODE``, a
    read-only install): about 0.3 s per run. The core holds no assert worth explaining (its few are for mypy).
    """

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: Any = None) -> Any:
        if not name.startswith("aliascheck."):
            return None
        return importlib.machinery.PathFinder.find_spec(name, path)


def _import_unrewritten(config: pytest.Config) -> None:
    hooks = [i for i, f in enumerate(sys.meta_path) if type(f).__name__ == "AssertionRewritingHook"]
    if not hooks:  # --assert=plain: nothing rewrites
        return
    finder = _Unrewritten()
    sys.meta_path.insert(hooks[0], finder)

    def remove() -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)

    config.add_cleanup(remove)


class SessionPlugin:
    """The per-run hooks; registered only with --aliascheck."""

    def __init__(self, session: Session, config: pytest.Config) -> None:
        self.session = session
        self.config = config
        self.problems: list[str] = []  # reports that could not be written, said in the summary
        self._shared: Any = None  # fixture values several tests receive (aliascheck.shared_fixtures), once one is

    def pytest_collection_finish(self) -> None:
        # After collection the test modules' imports are done: install what applies
        # now, so a bad aliascheck_stateful entry is one usage error, not N test errors.
        from .errors import UsageError

        try:
            self.session.adapters.refresh()
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, Any]:
        marker = item.get_closest_marker("aliascheck")
        ignore = tuple(marker.kwargs.get("ignore", ())) if marker else ()
        if item.get_closest_marker("no_aliascheck") is None:
            self.session.begin_test(item.nodeid, ignore)
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any) -> Generator[None, None, Any]:
        led = self.session.ledger
        owning = led.recording and fixturedef.scope == "function"
        led.owning = owning or led.owning
        try:
            return (yield)
        finally:
            if owning:
                led.owning = False

    def pytest_fixture_post_finalizer(self, fixturedef: Any) -> None:
        if self._shared is not None and fixturedef.scope != "function":
            self._shared.finished(fixturedef)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, Any]:
        __tracebackhide__ = True
        led = self.session.ledger
        if led.recording and getattr(item, "funcargs", None):
            if self._shared is None:
                from .shared_fixtures import SharedFixtures

                self._shared = SharedFixtures()
            self._shared.received(item, led, self.session.discovery.in_project)
        led.owning = led.recording
        try:
            result = yield
        except BaseException as exc:
            # What the test raised itself (aliascheck.fresh.assert_same) is not said twice.
            raised = {id(f) for f in getattr(exc, "findings", ())}
            findings = [f for f in self.session.end_test(self._steps(item)) if id(f) not in raised]
            if findings:
                from .report import render

                item.add_report_section("call", "aliascheck", render(findings, self.session.options.verbose))
            raise
        self._act(self.session.end_test(self._steps(item)))
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, Any]:
        self.session.abandon_test()
        return (yield)

    def _steps(self, item: pytest.Item) -> int:
        marker = item.get_closest_marker("aliascheck")
        if marker is not None and "steps" in marker.kwargs:
            return int(marker.kwargs["steps"])
        return self.session.options.steps

    def _act(self, findings: list[Any]) -> None:
        __tracebackhide__ = True
        if not findings:
            return  # nothing imported at a clean test's end: an import would run the program's __import__ hook
        from .errors import AliascheckWarning, AliasFinding
        from .report import failure

        verbose = self.session.options.verbose
        errors = [f for f in findings if f.severity == "error"]
        warned = [f for f in findings if f.severity == "warning"]
        if errors and self.session.options.mode == "fail":
            raise AliasFinding(errors, failure(errors, verbose))
        import warnings

        shown = errors + warned
        if shown:
            warnings.warn(AliascheckWarning(failure(shown, verbose)), stacklevel=1)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from .report import by_bug, summary

        bugs = by_bug(self.session.findings)
        if bugs:
            terminalreporter.section("aliascheck: bugs", sep="-")
            for line in bugs:
                terminalreporter.write_line(line)
        for line in summary(self.session.stats, self.session.findings, self.session.tests):
            terminalreporter.write_line(line)
        for problem in self.session.problems + self.problems + _unmarked():
            terminalreporter.write_line(f"aliascheck: {problem}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        import aliascheck.jsonreport as jsonreport

        # Children that outlived their test (a torchdata ParallelMapper's daemon workers): their
        # findings are put on that test here, and fail the run as they would have failed it.
        late = [f for f in self.session.end_children() if f.severity == "error"]
        if late and self.session.options.mode == "fail" and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            self.problems.append(f"{len(late)} finding(s) from child processes that outlived their test "
                                 "(listed under 'aliascheck: bugs'): the run fails")

        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller merges and reports
            workeroutput["aliascheck"] = jsonreport.payload(self.session.stats, self.session.findings)
            workeroutput["aliascheck_tests"] = self.session.tests
            return
        options, findings = self.session.options, self.session.findings
        if options.report:
            self._write(options.report, jsonreport.payload(self.session.stats, findings))
        if options.sarif:
            from .bugs import Code, group
            from .sarifreport import sarif

            def at_test(bug: Any) -> Code | None:  # a bug whose line is not in the checkout: its first test
                return Code(bug.tests[0].partition("::")[0], 0) if bug.tests else None

            self._write(options.sarif, sarif(group(f for f in findings if f.severity != "info"), at_test))

    def _write(self, path: str, data: dict[str, Any]) -> None:
        """Write a report; an unwritable path is one line in the summary, the run's outcome stands."""
        import aliascheck.jsonreport as jsonreport

        try:
            jsonreport.write(path, data)
        except OSError as exc:
            self.problems.append(f"error: cannot write {path}: {exc.strerror or exc}")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        import aliascheck.jsonreport as jsonreport

        data = getattr(node, "workeroutput", {}).get("aliascheck")
        if data is not None:
            jsonreport.absorb(data, self.session.stats, self.session.findings)
            self.session.tests += node.workeroutput.get("aliascheck_tests", 0)


class Helper:
    """The ``aliascheck`` fixture: explicit handovers and checks inside a test."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def watch(self, obj: Any, owner: Any = None) -> Any:
        """Record *obj* as handed over now (by *owner*); it is re-verified at teardown."""
        self._session.ledger.watch(obj, obj if owner is None else owner)
        return obj

    def check_node(self, node: Any, steps: int = 4) -> list[Any]:
        """Step *node* ahead now and re-verify every snapshot; returns the findings."""
        return self._session.check_node(node, steps)

    @property
    def findings(self) -> list[Any]:
        return list(self._session.ledger.findings)


@pytest.fixture
def aliascheck(request: pytest.FixtureRequest) -> Generator[Helper, None, None]:
    """Explicit aliascheck use; works with or without ``--aliascheck``."""
    session = request.config.stash.get(SESSION_KEY, None)
    if session is not None:
        yield Helper(session)
        return
    from .config import Options
    from .session import Session

    own = Session(Options(enabled=True))
    own.start()
    own.begin_test(request.node.nodeid)
    own.ledger.owning = True
    try:
        yield Helper(own)
        findings = [f for f in own.end_test(0) if f.severity == "error"]
    finally:
        own.stop()
    if findings:
        from .errors import AliasFinding
        from .report import failure

        raise AliasFinding(findings, failure(findings))


def _unmarked(shown: int = 5) -> list[str]:
    """The project modules whose marking failed: they ran as written, their keeps not looked at."""
    rewrite = sys.modules.get("aliascheck.boundary.rewrite")
    failed = sorted(getattr(rewrite, "UNMARKED", {}).items())
    lines = [f"{path} ran unmarked, its keeps not looked at (the marking failed: {why}); please report it"
             for path, why in failed[:shown]]
    if len(failed) > shown:
        lines.append(f"and {len(failed) - shown} more modules ran unmarked")
    return lines
