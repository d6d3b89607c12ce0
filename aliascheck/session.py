"""One detection run: a ledger, its adapters, the harness, and the findings so far.

Used by the pytest plugin (one per pytest session), the ``aliascheck`` fixture
without ``--aliascheck`` (one per test) and ``aliascheck check`` (one per run).
"""

from __future__ import annotations

import os
from typing import Any

import aliascheck.harness as harness

from .adapters import Adapters
from .config import Options
from .diff import Change
from .discovery import Discovery
from .findings import Finding
from .ledger import Ledger, Settings, Stats, pop, push
from .shadow import qualname_of


class Session:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.ledger = Ledger(Settings(ignore=options.ignore, strict=options.strict))
        self.adapters = Adapters(options)
        self.discovery = Discovery(options.discover, options.roots or (os.getcwd(),))
        self.findings: list[Finding] = []
        self.stats = Stats()
        self.tests = 0
        self._started = False

    def start(self) -> None:
        push(self.ledger)
        self._started = True
        self.discovery.start()

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self.discovery.stop()
        self.adapters.uninstall()
        pop(self.ledger)

    def begin_test(self, test: str | None, ignore: tuple[str, ...] = ()) -> None:
        self.adapters.refresh()
        self.tests += 1
        self.ledger.begin(test, ignore)

    def end_test(self, steps: int) -> list[Finding]:
        """Step the test's roots ahead, re-verify every record, and take the findings."""
        led = self.ledger
        if not led.recording:
            return []
        led.owning = False
        try:
            self.step_roots(harness.select_roots([r for r in led.roots.values() if led.built_now(r)]), steps)
            self.adapters.teardown(led)
            led.verify_all("teardown")
            found = led.drain()
        finally:
            self._absorb()
            led.end()
        self.findings.extend(found)
        return found

    def abandon_test(self) -> None:
        """The test never ran its body (setup failed or it was skipped): drop its records."""
        if self.ledger.recording:
            self.ledger.drain()
            self._absorb()
            self.ledger.end()

    def step_roots(self, roots: list[Any], steps: int, check: str = "teardown") -> list[Finding]:
        """Step each root; a root that could not be stepped is an ``unverifiable`` note (also in the ledger)."""
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
