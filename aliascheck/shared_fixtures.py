"""Fixture values shared by several tests: a module-, class- or session-scoped fixture hands every test
that asks for it the one object it made, as a cache hands every caller its stored value. A test that
edits it in place (``cfg.update(debug=True)`` of a session ``cfg``) changes what every later test
receives: each test passes alone and fails or passes by order in a run.

Judged where a later test receives it (rule *Caches*, for the test harness's own cache): its value then
against its value when the last test that received it began. Plain data only (containers, dataclass
instances, ``SimpleNamespace``), as for a cached value; an empty container or one holding only empty
containers is a store the tests fill on purpose (``results = []`` shared to collect). Only fingerprints
and ids are kept, never the value: pytest holds it for its scope.
"""

from __future__ import annotations

import types
from typing import Any

import aliascheck.judge as judge
import aliascheck.mutability as mutability
from aliascheck.diff import diff
from aliascheck.fingerprint import Fingerprint, fingerprint

CHECK = "fixture"
# A value whose fingerprint is larger is not looked at again at each test (a session's dataset).
MOST_BYTES = 64 * 1024


class SharedFixtures:
    def __init__(self) -> None:
        # (id of the fixture definition, id of its value) -> (its fingerprint when the last test that
        # received it began, that test's id, the fixture's name and scope)
        self.seen: dict[tuple[int, int], tuple[Fingerprint, str, str, str]] = {}

    def received(self, item: Any, led: Any, in_project: Any) -> None:
        """*item* begins its call with its fixtures' values set up: each shared one it was given, made by
        a fixture the project defines (*in_project* of its file: pytest's own ``tmp_path_factory`` and a
        plugin's fixtures keep their own state), is compared with its value when the last test that
        received it began. Never raises."""
        if not led.recording:
            return
        try:
            values = dict(item.funcargs)
            defs = item._fixtureinfo.name2fixturedefs
        except Exception:  # not a python test function (a doctest, another plugin's item)
            return
        for name, value in values.items():
            try:
                chain = defs.get(name)
                if not chain or chain[-1].scope == "function":
                    continue
                func = chain[-1].func
                if type(func) is not types.FunctionType or not in_project(func.__code__.co_filename):
                    continue
                if judge.constant(value) or not mutability.plain_data(value) or judge.is_store(value):
                    continue
                self._compare(led, item.nodeid, name, chain[-1], value)
            except Exception as exc:  # aliascheck's own failure never reaches the test
                judge.internal(led, "fixtures", exc)

    def finished(self, fixturedef: Any) -> None:
        """*fixturedef*'s value was torn down (its scope ended): what was seen of it goes, so that a value
        it makes again at a reused id is looked at afresh."""
        for key in [k for k in self.seen if k[0] == id(fixturedef)]:
            del self.seen[key]

    def _compare(self, led: Any, test: str, name: str, fixturedef: Any, value: Any) -> None:
        key = (id(fixturedef), id(value))
        known = self.seen.get(key)
        if known is not None and known[0].detail is None:
            return  # too large to look at on every test: as a cache's value, not per hit
        now = fingerprint(value)
        if now.detail is not None and len(now.detail) > MOST_BYTES:
            now = Fingerprint(now.digest, None, now.opaque, now.truncated, now.exact)
        self.seen[key] = (now, test, name, fixturedef.scope)
        if known is None or known[0].digest == now.digest or now.detail is None:
            return
        before, last, _, scope = known
        changes = [c for c in diff(before, now, collapse=True, reads=True)]
        if changes:
            led.report("mutation", changes, owner=f"{name} ({scope}-scoped fixture)", label=name, check=CHECK,
                       hint=f"copy the fixture's value in the test that changes it ({last}), or make "
                            f"{name} function-scoped",
                       shares=f"one {type(value).__name__} every test that asks for {name} receives; "
                              f"changed by {last}")
