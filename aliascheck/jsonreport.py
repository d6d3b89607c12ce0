"""The JSON report: every occurrence as it is, the bugs they group into, and the run's counters.

Version 2 (docs/formats.md, "The JSON and SARIF reports"): each finding carries the ``bug`` id it
belongs to; ``bugs`` holds one entry per bug with its gist, fix and location.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .bugs import Bug, group
from .findings import Finding
from .ledger import Stats

VERSION = 2


def payload(stats: Stats, findings: Iterable[Finding]) -> dict[str, Any]:
    findings = list(findings)
    bugs = group(findings)
    ids = {id(f): bug.id for bug in bugs for f in bug.occurrences}
    return {
        "version": VERSION,
        "handovers": stats.handovers,
        "checked": stats.checked,
        "flagged": stats.flagged,
        "unverifiable": stats.unverifiable,
        "owners": dict(stats.owners),
        "bugs": [bug_json(b) for b in bugs],
        "findings": [{**f.to_json(), "bug": ids[id(f)]} for f in findings],
    }


def bug_json(bug: Bug) -> dict[str, Any]:
    location = bug.location
    return {
        "id": bug.id,
        "kind": bug.kind,
        "severity": bug.severity,
        "owner": bug.owner,
        "gist": bug.gist,
        "origin": bug.first.origin,
        "shares": bug.first.shares,
        "change": bug.change,
        "fix": bug.fix,
        "location": None if location is None else {"file": location.file, "line": location.line},
        "checks": dict(bug.checks),
        "tests": bug.tests,
        "instances": bug.instances,
        "occurrences": len(bug.occurrences),
    }


def absorb(data: dict[str, Any], stats: Stats, findings: list[Finding]) -> None:
    """Merge a payload (an xdist worker's) into *stats* and *findings*."""
    stats.merge(Stats(data["handovers"], data["checked"], data["flagged"], data["unverifiable"]))
    stats.owners.update(data.get("owners", {}))
    findings.extend(Finding.from_json(f) for f in data["findings"])


def write(path: str, data: dict[str, Any]) -> None:
    """Write *data* as JSON; an OSError (an unwritable path) is the caller's to report."""
    Path(path).write_text(json.dumps(data, indent=2) + "\n")
