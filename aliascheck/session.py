"""One detection run: a ledger, its adapters, the harness, and the findings so far.

Used by the pytest plugin (one per pytest session), the ``aliascheck`` fixture
without ``--aliascheck`` (one per test) and ``aliascheck check`` (one per run).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from . import processes
from .adapters import Adapters
from .config import Options
from .diff import Change
from .discovery import Discovery
from .findings import Finding
from .ledger import Ledger, Settings, Stats, pop, push, swap
from .shadow import qualname_of
from .spool import Spool


class Session:
    def __init__(self, options: Options, plugins: list[tuple[str, str]] | None = None, child: bool = False) -> None:
        self.options = options
        self.ledger = Ledger(Settings(ignore=options.ignore, strict=options.strict))
        self.adapters = Adapters(options, plugins, child)
        self.spool: Spool | None = None  # the children's findings (a pytest session's)
        self.discovery = Discovery(options.discover, options.roots or (os.getcwd(),))
        self.child = child
        self.findings: list[Finding] = []
        # Findings of children that outlived their test, whenever they arrived (during a later
        # test's end, or at the session's): the run fails for each, however the timing fell.
        self.late: list[Finding] = []
        self.stats = Stats()
        self.tests = 0
        self._started = False

    def start(self, children: bool = False) -> None:
        """Begin recording; with *children*, every Python child process records too (:mod:`aliascheck.processes`)."""
        processes.stop_inherited()  # a checked pytest started by a checked test (pytester, xdist): its own session
        for name in _TEST_MODULES:  # what each test's begin and end use, loaded while sys.modules is the interpreter's
            _module(name)
        push(self.ledger)
        self._started = True
        # A child process's __main__ is a script the interpreter compiled before any marking: its
        # classes are found through __build_class__ there, as with the marking off.
        self.discovery.start(marked=self.options.boundary == "on" and not self.child)
        if self.options.boundary == "on":
            self._mark_project()
        if children:
            self.spool = Spool(self.options, self.adapters.plugins)
            self.spool.open()
            processes.session_started(self, str(self.spool.dir))

    def _mark_project(self) -> None:
        """Boundary handovers: the project's modules are marked as they are imported
        (:mod:`aliascheck.boundary.rewrite`)."""
        import aliascheck.boundary.rewrite as rewrite
        import aliascheck.boundary.runtime as boundary
        import aliascheck.sites as sites

        project = self.discovery.in_project

        def marked(file: str) -> bool:  # the project's files, never aliascheck's own (nor its fixed nodes)
            return project(file) and not file.startswith(sites._OURS)

        boundary.start(self.ledger)
        boundary.set_project(marked)
        rewrite.install(marked)

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        if self.spool is not None:
            self.findings += self._from_children(None)  # children that ended after their test
            processes.session_stopped(self)
            self.spool.close()
        self.discovery.stop()
        if self.options.boundary == "on":
            import aliascheck.boundary.rewrite as rewrite
            import aliascheck.boundary.runtime as boundary

            rewrite.uninstall()
            boundary.stop()
        self.adapters.uninstall()
        pop(self.ledger)

    def end_children(self, timeout: float = 5.0) -> list[Finding]:
        """Before the session reports: daemonic workers still running are ended (their teardown
        check runs first), and every finding of a child that outlived its test is returned, those a
        later test's end took in included."""
        if self.spool is None:
            return []
        self.spool.end_daemons(timeout)
        self.findings += self._from_children(None)  # no test runs now: every finding is an earlier test's
        return list(self.late)

    def fork(self) -> None:
        """In a forked child: a new ledger in place of the inherited one."""
        old = self.ledger
        self.ledger = Ledger(old.settings)
        self.spool = None
        swap(old, self.ledger)
        if self.options.boundary == "on":
            import aliascheck.boundary.runtime as boundary

            boundary.follow(self.ledger)

    @property
    def problems(self) -> list[str]:
        return self.adapters.problems + (self.spool.problems if self.spool is not None else [])

    def begin_test(self, test: str | None, ignore: tuple[str, ...] = ()) -> None:
        self.adapters.refresh()
        self.tests += 1
        self.ledger.begin(test, ignore)
        if self.options.boundary == "on":
            _module("aliascheck.boundary.runtime").begin()
        if self.spool is not None:
            self.spool.set_test(test)

    def end_test(self, steps: int) -> list[Finding]:
        """Step the test's roots ahead, re-verify every record, and take the findings."""
        led = self.ledger
        if not led.recording:
            return []
        led.owning = False
        try:
            harness = _module("aliascheck.harness")
            self.step_roots(harness.select_roots([r for r in led.roots.values() if led.built_now(r)]), steps)
            self.adapters.teardown(led)
            if self.options.boundary == "on":
                _module("aliascheck.boundary.runtime").judge_all()
            led.verify_all("teardown")
            found = led.drain()
        finally:
            _module("aliascheck.sites").release_test_frames()
            if self.options.boundary == "on":
                _module("aliascheck.boundary.runtime").end()
            self._absorb()
            led.end()
        found += self._from_children(led.test)
        self.findings.extend(found)
        return found

    def _from_children(self, test: str | None) -> list[Finding]:
        """What child processes found so far: this test's, to fail it; an earlier test's
        (a child that outlived it) goes to the summary only."""
        if self.spool is None:
            return []
        mine: list[Finding] = []
        late: list[Finding] = []
        spool = self.spool
        found = spool.collect()
        self.stats.handovers += spool.handovers
        self.stats.checked += spool.checked
        self.stats.owners.update(spool.owners)
        spool.handovers = spool.checked = 0
        spool.owners.clear()
        for finding in found:
            (mine if finding.test == test and test is not None else late).append(finding)
            if finding.kind == "unverifiable":
                self.stats.unverifiable += 1
            elif finding.severity != "info":
                self.stats.flagged += 1
        self.findings.extend(late)
        self.late.extend(late)
        return mine

    def abandon_test(self) -> None:
        """The test never ran its body (setup failed or it was skipped): drop its records."""
        if self.ledger.recording:
            self.ledger.drain()
            self._absorb()
            self.ledger.end()

    def step_roots(self, roots: list[Any], steps: int, check: str = "teardown") -> list[Finding]:
        """Step each root; a root that could not be stepped is an ``unverifiable`` note (also in the ledger)."""
        harness = _module("aliascheck.harness")

        notes: list[Finding] = []
        for root in roots:
            if steps <= 0:
                break
            it = self.adapters.step_iterator(root)
            if it is None:
                it = harness.iterator_of(root)
            if it is None:
                continue  # never started: stepping would start what the test did not
            result = harness.step(it, type(root).__qualname__, steps, self.options.step_timeout)
            if result.note and result.note != "exhausted":
                notes += self.ledger.report(
                    "unverifiable", [Change("<root>", f"stepped {result.steps} of {steps}", result.note)],
                    owner=qualname_of(type(root)), label=self.ledger.label(root), check=check,
                    hint="the teardown check could not step this node; its snapshots were verified as they were",
                )
        return notes

    def check_node(self, node: Any, steps: int) -> list[Finding]:
        """Step *node* now (the fixture's explicit check), verify every record, return the findings so far."""
        led = self.ledger
        self.step_roots([node], steps, check="harness")
        led.verify_all("harness")
        with led.lock:
            return list(led.findings)

    def _absorb(self) -> None:
        self.stats.merge(self.ledger.stats)
        self.ledger.stats = Stats()


def _module(name: str) -> Any:
    """An aliascheck module a test's begin or end needs, loaded once and held here: never through an
    import statement in a function, which calls ``builtins.__import__``, a hook the program may have
    replaced (dill's ``__diff`` memorises every module through it), at each test; nor looked up in
    ``sys.modules`` then, which a test may have replaced (structlog's ``monkeypatch.setattr(sys,
    "modules", {})``, undone only at its teardown, after the call phase's end check)."""
    found = _MODULES.get(name)
    if found is None:
        found = _MODULES[name] = sys.modules.get(name) or importlib.import_module(name)
    return found


_MODULES: dict[str, Any] = {}
_TEST_MODULES = ("aliascheck.harness", "aliascheck.boundary.runtime", "aliascheck.sites")
