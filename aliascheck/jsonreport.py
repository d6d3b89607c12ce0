"""The JSON report: findings serialised as they are, plus the run's counters."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .findings import Finding
from .ledger import Stats

VERSION = 1


def payload(stats: Stats, findings: Iterable[Finding]) -> dict[str, Any]:
    return {
        "version": VERSION,
        "handovers": stats.handovers,
        "checked": stats.checked,
        "flagged": stats.flagged,
        "unverifiable": stats.unverifiable,
        "owners": dict(stats.owners),
        "findings": [f.to_json() for f in findings],
    }


def absorb(data: dict[str, Any], stats: Stats, findings: list[Finding]) -> None:
    """Merge a payload (an xdist worker's) into *stats* and *findings*."""
    stats.merge(Stats(data["handovers"], data["checked"], data["flagged"], data["unverifiable"]))
    stats.owners.update(data.get("owners", {}))
    findings.extend(Finding.from_json(f) for f in data["findings"])


def write(path: str, stats: Stats, findings: Iterable[Finding]) -> None:
    Path(path).write_text(json.dumps(payload(stats, findings), indent=2) + "\n")
