"""Rendering findings for people: one block per snapshot, every changed path listed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby

from .findings import Finding
from .ledger import Stats

TITLES = {
    "mutation": "handed-over state changed after the handover",
    "alias": "handed-over state shares live objects with its owner",
    "class-reset": "cloudpickle.loads reset an existing class",
    "unverifiable": "could not be checked",
    "fresh-class": "a fresh process rebuilds the class differently",
    "resume": "a node restored from a snapshot did not continue the original run",
}
CHECK_TEXT = {
    "handover": "the next handover of the same object",
    "delivery": "delivery to the consumer",
    "reentry": "re-entry (reset/load_state_dict)",
    "teardown": "teardown, after stepping the test's root nodes",
    "harness": "the harness, after stepping the node",
    "alias-probe": "the alias probe at handover",
    "loads": "the live class before and after loads",
    "fresh-process": "loading the pickle in a fresh process",
    "resume": "resume-equivalence: a fresh node restored from the snapshot",
}


def _key(f: Finding) -> tuple:
    return (f.kind, f.owner, f.label, f.handover, f.check)


def render(findings: Sequence[Finding]) -> str:
    blocks = []
    for (kind, owner, label, handover, check), group in groupby(findings, key=_key):
        items = list(group)
        head = items[0]
        lines = [f"aliascheck [{kind}]: {TITLES.get(kind, kind)}",
                 f"  owner:    {owner}" + (f" ({label})" if label and label != owner else "")]
        for f in items:
            lines.append(f"  path:     {f.path}    {f.before} -> {f.after}")
            if f.more:
                lines.append(f"            ... and {f.more} more changed paths")
        if handover:
            thread = f" (thread {head.thread})" if head.thread and head.thread != "MainThread" else ""
            lines.append(f"  handover: {handover}{thread}")
        lines.append(f"  seen by:  {CHECK_TEXT.get(check, check)}")
        if head.stack:
            lines.append("  stack:    " + "\n            ".join(head.stack))
        if head.hint:
            lines.append(f"  fix:      {head.hint}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def summary(stats: Stats, findings: Iterable[Finding], tests: int) -> list[str]:
    findings = list(findings)
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    lines = [
        f"aliascheck: {tests} tests, {stats.handovers} handovers recorded, {stats.checked} checked, "
        f"{stats.flagged} flagged ({errors} findings, {warnings} warnings), {stats.unverifiable} unverifiable",
    ]
    if stats.owners:
        owners = ", ".join(f"{name} ({n})" for name, n in stats.owners.most_common(12))
        more = len(stats.owners) - 12
        lines.append(f"aliascheck: owners covered: {owners}" + (f", and {more} more" if more > 0 else ""))
    return lines
