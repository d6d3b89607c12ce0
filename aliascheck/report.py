"""Rendering for people: one block per bug, its occurrences counted (listed when verbose)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .bugs import Bug, counts, group, seen_by
from .findings import Finding
from .ledger import Stats

MAX_TESTS = 10  # tests listed under a bug in the terminal summary


def render(findings: Sequence[Finding], verbose: bool = False, noun: str = "test") -> str:
    """Every bug among *findings* as a block; *verbose* lists each occurrence under its bug."""
    return "\n\n".join(block(bug, verbose, noun) for bug in group(findings))


def block(bug: Bug, verbose: bool = False, noun: str = "test") -> str:
    f = bug.first
    instances = bug.instances
    if instances > 1:
        which = f" ({instances} instances)"
    else:
        which = f" ({f.label})" if f.label and f.label != f.owner else ""
    lines = [f"aliascheck [{bug.kind}]: {bug.gist}", f"  owner:    {bug.owner}{which}"]
    if bug.origin:
        lines.append(f"  let out:  {bug.origin} in {bug.origin.function}")
    if f.shares:
        lines.append(f"  shares:   {f.shares}")
    lines.append(f"  change:   {f.path}    {f.detail or f'{f.before} -> {f.after}'}")
    if f.more:
        lines.append(f"            ... and {f.more} more changed paths")
    lines.append(f"  seen by:  {seen_by(bug)}")
    if f.handover:
        runner = f.thread if f.thread.startswith(("task ", "thread ")) else f"thread {f.thread}"
        thread = f" ({runner})" if f.thread and f.thread != "MainThread" else ""
        lines.append(f"  handover: {f.handover}{thread}")
    processes = bug.processes
    if processes:
        more = f" and {len(processes) - 3} more" if len(processes) > 3 else ""
        lines.append(f"  process:  {'; '.join(processes[:3])}{more}")
    if f.stack and (verbose or not bug.origin):
        lines.append("  stack:    " + "\n            ".join(f.stack))
    fix = bug.fix
    if fix:
        lines.append(f"  fix:      {fix}")
    tests = bug.tests
    where = f" in {len(tests)} {noun}{'' if len(tests) == 1 else 's'}" if tests else ""
    lines.append(f"  {len(bug.occurrences)} occurrence{'' if len(bug.occurrences) == 1 else 's'}{where}")
    if verbose:
        lines += [f"    - {_occurrence(o)}" for o in bug.occurrences]
    return "\n".join(lines)


def _occurrence(f: Finding) -> str:
    change = f.detail or f"{f.before} -> {f.after}"
    test = f"{f.test}: " if f.test else ""
    label = f" {f.label}" if f.label and f.label != f.owner else ""
    more = f" (+{f.more} more paths)" if f.more else ""
    process = f", {f.process}" if f.process else ""
    return f"{test}{f.path}: {change}{more} [{f.check}{label}, handover {f.handover or '-'}{process}]"


def gist(findings: Sequence[Finding]) -> str:
    """One line for a failure's short summary: the gist of the first bug, and how many more."""
    bugs = group(findings)
    if not bugs:
        return ""
    more = len(bugs) - 1
    return bugs[0].gist + (f" (and {more} more bug{'' if more == 1 else 's'})" if more else "")


def failure(findings: Sequence[Finding], verbose: bool = False) -> str:
    """The message of a failed test: the gist first (pytest's short summary shows that line), then the blocks."""
    return gist(findings) + "\n\n" + render(findings, verbose)


def summary(stats: Stats, findings: Iterable[Finding], tests: int) -> list[str]:
    findings = list(findings)
    bugs = group(f for f in findings if f.severity != "info")
    errors = [b for b in bugs if b.severity == "error"]
    warnings = [b for b in bugs if b.severity == "warning"]
    lines = [
        f"aliascheck: {tests} tests, {stats.handovers} handovers recorded, {stats.checked} checked: "
        f"{counts(errors)}, {len(warnings)} warning{'' if len(warnings) == 1 else 's'}, "
        f"{stats.unverifiable} unverifiable",
    ]
    if stats.owners:
        owners = ", ".join(f"{name} ({n})" for name, n in stats.owners.most_common(12))
        more = len(stats.owners) - 12
        lines.append(f"aliascheck: owners covered: {owners}" + (f", and {more} more" if more > 0 else ""))
    return lines


def by_bug(findings: Iterable[Finding]) -> list[str]:
    """The terminal summary's section: each bug once, with the tests it failed."""
    lines = []
    for bug in group(f for f in findings if f.severity != "info"):
        lines.append(f"[{bug.kind}] {bug.gist}")
        if bug.fix:
            lines.append(f"    fix: {bug.fix}")
        tests = bug.tests
        lines += [f"    {test}" for test in tests[:MAX_TESTS]]
        if len(tests) > MAX_TESTS:
            lines.append(f"    ... and {len(tests) - MAX_TESTS} more tests")
    return lines
