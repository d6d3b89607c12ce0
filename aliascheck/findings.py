"""Frozen records: what was handed over, and what was found. The JSON report's schema.

A :class:`Finding` is one occurrence: one changed path of one snapshot, seen by
one check. Occurrences of the same bug are grouped by :mod:`aliascheck.bugs`.
The kinds (stable slugs), their titles and hints live in :mod:`aliascheck.kinds`.
Findings are made only by :meth:`aliascheck.ledger.Ledger.report`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .kinds import CHECKS, KINDS

__all__ = ["CHECKS", "KINDS", "Finding"]


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    owner: str
    path: str
    before: str
    after: str
    handover: str  # file:line where the state was handed over (or loaded, or pickled)
    check: str
    test: str | None = None
    label: str = ""
    severity: str = "error"  # error | warning | info
    hint: str = ""
    stack: tuple[str, ...] = field(default=())
    more: int = 0  # changed paths of the same snapshot left out of the report
    thread: str = ""  # the thread the handover happened in
    detail: str = ""  # a collection change in words: "list grew from 0 to 36 items (appended 0, 1, 2, ...)"
    origin: str = ""  # "file:line in Qualname.method": the owner's own code that let the state out
    shares: str = ""  # the live object the snapshot shares: "Shards.pos['seen']"
    process: str = ""  # the child process it was found in: "pid 4242, DataLoader worker 0"; "" for the test's own

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stack"] = list(self.stack)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        """Read what :meth:`to_json` wrote (an xdist worker's, or an older report's)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["stack"] = tuple(values.get("stack", ()))
        return cls(**values)
