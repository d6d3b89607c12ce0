"""Occurrences grouped into bugs: the unit every report is made of.

One bug in a user's node shows up many times: every handover of every
instance, seen by every check, in every test or schedule. Occurrences are one
bug when they share the kind, the owner type, the live object the snapshot
shares (or the class attribute reset, or the path that could not be read) and
the code that let it out: the owner's own ``get_state``/``state_dict`` line, or
the handover site when the owner has none of its own.

A bug's :attr:`Bug.id` is stable across runs, machines and checkouts (no line
numbers, labels, thread names, process ids or absolute paths go into it), so
code scanning can follow it from one run to the next (SARIF ``partialFingerprints``).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import xxhash

from .findings import Finding
from .kinds import (
    CACHE_CHECKS,
    CHANNELS,
    CHECKS,
    COPY_CHECKS,
    LOAD_METHODS,
    MOCK_READ,
    SERIALISED,
    SERIALISED_FIX,
    SERIALISED_LATE,
    SERIALISED_LATE_FIX,
    SHARED_FIX,
    SHARED_RECEIPT,
)

_INDEX = re.compile(r"\[\d+\]")
_ATTRIBUTE = re.compile(r"^[^.\[]+(\.[^.\[]+)?")  # "Shards.pos" of "Shards.pos['seen']"
_SEVERITY = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class Code:
    """A place in code: ``file:line in function``, as findings name it."""

    file: str
    line: int
    function: str = ""

    @classmethod
    def parse(cls, text: str) -> Code | None:
        where, _, function = text.partition(" in ")
        file, _, line = where.rpartition(":")
        if not file or not line.isdigit():
            return None
        return cls(file, int(line), function)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def method(self) -> str:
        """``Shards.get_state`` of ``mynodes.Shards.get_state``: the function's last two names."""
        return ".".join(self.function.split(".")[-2:])

    def stable(self) -> str:
        """The place without its line number or machine-specific directories."""
        file = self.file.replace(os.sep, "/")
        if os.path.isabs(self.file):
            file = "/".join(file.split("/")[-2:])
        return f"{file} in {self.function}" if self.function else file


@dataclass(frozen=True, slots=True)
class Bug:
    kind: str
    owner: str
    occurrences: tuple[Finding, ...]

    @property
    def first(self) -> Finding:
        return self.occurrences[0]

    @property
    def severity(self) -> str:
        return min((f.severity for f in self.occurrences), key=lambda s: _SEVERITY.get(s, 0))

    @property
    def origin(self) -> Code | None:
        return Code.parse(self.first.origin)

    @property
    def site(self) -> Code | None:
        """Where the state was handed over: the first frame of the handover's stack."""
        first = self.first
        return (Code.parse(first.stack[0]) if first.stack else None) or Code.parse(first.handover)

    @property
    def subject(self) -> str:
        """What the occurrences share: the live object, the class attribute, the unreadable part."""
        first = self.first
        if first.kind in ("mutation", "alias") and first.shares:
            # The owner's attribute, not each object under it: a module's parameters
            # (Linear._parameters['weight'], ['bias']) are one bug of the line that let them out.
            found = _ATTRIBUTE.match(first.shares)
            return found.group(0) if found else first.shares
        if first.kind in ("class-reset", "fresh-class"):
            return re.split(r"[\[.]", first.path, maxsplit=1)[0]
        if first.kind == "unverifiable":
            return _INDEX.sub("[*]", first.path)
        if first.kind in ("kept", "handed", "copied"):  # the project's name for what it kept or handed
            return first.label
        return ""

    @property
    def id(self) -> str:
        return xxhash.xxh3_64_hexdigest("\0".join(_identity(self)).encode("utf-8", "surrogatepass"))

    @property
    def checks(self) -> Counter[str]:
        return Counter(f.check for f in self.occurrences)

    @property
    def tests(self) -> list[str]:
        return list(dict.fromkeys(f.test for f in self.occurrences if f.test))

    @property
    def processes(self) -> list[str]:
        """The child processes it was found in ("pid 4242, DataLoader worker 0"), if any."""
        return list(dict.fromkeys(f.process for f in self.occurrences if f.process))

    @property
    def instances(self) -> int:
        return len({f.label for f in self.occurrences if f.label}) or 1

    @property
    def location(self) -> Code | None:
        """The user's line to change: where live state left the owner, else the handover site."""
        return self.origin or self.site

    @property
    def change(self) -> str:
        """One representative change, in words."""
        first = self.first
        return f"{first.path}: {first.detail or f'{first.before} -> {first.after}'}"

    @property
    def gist(self) -> str:
        processes = self.processes
        if not processes:
            return _gist(self)
        worker = processes[0].partition(", ")[2] or processes[0]  # "DataLoader worker 0", else "pid 4242"
        return f"{_gist(self)} (in {worker})"

    @property
    def fix(self) -> str:
        return _fix(self)


def group(findings: Iterable[Finding]) -> list[Bug]:
    """The bugs among *findings*, in the order first seen (errors, then warnings, then notes)."""
    bugs: dict[tuple[str, ...], list[Finding]] = {}
    for finding in findings:
        bugs.setdefault(_key(finding), []).append(finding)
    out = [Bug(found[0].kind, found[0].owner, tuple(found)) for found in bugs.values()]
    return sorted(out, key=lambda b: _SEVERITY.get(b.severity, 0))


def _key(f: Finding) -> tuple[str, ...]:
    return _identity(Bug(f.kind, f.owner, (f,)))


def _identity(bug: Bug) -> tuple[str, str, str, str]:
    """Kind, owner type, what is shared, and the code that let it out (no line numbers)."""
    # A resume is the restore's, wherever the snapshot was taken: its code is the owner's own reset().
    code = bug.origin if bug.kind == "resume" else bug.origin or bug.site
    return (bug.kind, bug.owner, bug.subject, code.stable() if code else "")


def _within(shares: str) -> str:
    """``pos['seen']`` of ``Shards.pos['seen']``: the path inside the owner."""
    head, dot, rest = shares.partition(".")
    return rest if dot and "[" not in head else shares


def _gist(bug: Bug) -> str:
    f, origin, site = bug.first, bug.origin, bug.site
    where = f"{origin.function} ({origin})" if origin else ""
    if f.kind == "mutation" and f.check in CACHE_CHECKS + COPY_CHECKS:
        return _copied_gist(bug)
    if f.kind == "mutation" and f.check == "load":
        loader = where or (f"{f.owner} ({site})" if site else f.owner)
        return f"{loader} wrote into the state it was given: {bug.change}"
    if f.kind == "mutation" and f.check == "context":
        return (f"{f.thread} read ContextVar {f.label!r} ({site}), whose value its context copy shares, "
                f"changed after the copy was made: {bug.change}")
    if f.kind == "mutation" and f.check == "default returned":
        return (f"{f.label} returns {f.shares}: a caller still holds the one returned before, changed since: "
                f"{bug.change}")
    if f.kind == "mutation" and f.check == "default argument":
        return f"{f.label} keeps {f.shares}, changed through another: {bug.change}"
    if f.kind == "mutation" and f.check == "repeated":
        return f"{f.label} holds {f.shares}: a write through {f.label}{f.path} changes every position"
    if f.kind == "mutation" and f.check == "context default":
        return (f"{f.thread} read the default of ContextVar {f.label!r} ({site}), which every context shares, "
                f"after another task or thread wrote into it: {bug.change}")
    if f.kind == "mutation" and f.owner in CHANNELS:
        sender = f"{site.function} ({site})" if site and site.function else f"{f.owner} sender"
        if f.check == SERIALISED:
            return f"{sender} handed over tensors or arrays that changed before the worker serialised them: " \
                   f"{bug.change}"
        if f.check == SERIALISED_LATE:
            return f"{sender} handed over a value another task or thread changed before the worker serialised it: " \
                   f"{bug.change}"
        if f.check == MOCK_READ:
            return (f"{sender} changed an argument after calling the mock {f.label!r}; the test reads the recorded "
                    f"call as it is now: {bug.change}")
        if f.check == SHARED_RECEIPT:
            return f"{sender} sent one message object to several receivers; it changed after one took it: " \
                   f"{bug.change}"
        return f"{sender} sent a message it changed after {CHANNELS[f.owner][0]}: {bug.change}"
    if f.kind in ("mutation", "alias"):
        changed = "it changed after the handover" if f.kind == "mutation" else "not changed yet"
        if origin and origin.function.rpartition(".")[2] in LOAD_METHODS:
            return f"{where} keeps the state it was given; {f.path} changed after the load"
        if where and f.shares:
            return f"{where} hands out live {_within(f.shares)}; {changed}"
        if where:
            return f"{where} hands out state that changed after the handover: {bug.change}"
        at = f" at {site}" if site else ""
        what = "changed after the handover" if f.kind == "mutation" else "is shared, not changed yet"
        return f"{f.owner} state handed over{at} is live: {f.path} {what}"
    if f.kind == "kept":  # acts holds one live Tensor 4 times (handed out by ...): acts[0]: ...
        return f"{f.label} holds {f.shares or 'a live ' + f.owner}, changed after it was kept: {bug.change}"
    if f.kind == "handed":
        return f"{f.owner} kept {f.label}; {f.shares or 'it changed afterwards'}: {bug.change}"
    if f.kind == "copied":
        return f"{f.label} is a shallow copy: writing {f.label}{f.path} also changes its source's {f.path}"
    if f.kind == "class-reset":
        at = f" ({site})" if site else ""
        return f"cloudpickle.loads{at} reset {f.owner}.{f.path}: {f.before} -> {f.after}"
    if f.kind == "fresh-class":
        return f"a fresh process rebuilds {f.owner}.{f.path} as {f.after} (here {f.before})"
    if f.kind == "unverifiable":
        return f"{f.owner}: {f.path} could not be checked ({f.before})"
    if f.kind == "resume":
        return f"{f.owner} restored from {f.handover} did not continue the run: {f.path} {f.before} -> {f.after}"
    return f"{f.owner}: {bug.change}"


def _fix(bug: Bug) -> str:
    f, origin, site = bug.first, bug.origin, bug.site
    if f.kind == "mutation" and f.check in ("context", "context default", "repeated", "default argument",
                                            "default returned"):
        return f"{bug.location}: {f.hint}" if bug.location else f.hint
    if f.kind == "mutation" and f.check in CACHE_CHECKS + COPY_CHECKS:
        return _copied_fix(bug)
    if f.kind == "mutation" and f.check == "load":
        if origin:  # the load's own code is the fix, library or not
            return (f"{origin}: {origin.method}() must not consume the caller's state; "
                    "copy it before popping, adding or changing keys")
        return f"{bug.location}: pass the load a copy it may change (copy.deepcopy(state)), or load without it" \
            if bug.location else "pass the load a copy it may change (copy.deepcopy(state))"
    if f.kind == "mutation" and f.owner in CHANNELS:
        fix = {SHARED_RECEIPT: SHARED_FIX, SERIALISED: SERIALISED_FIX, SERIALISED_LATE: SERIALISED_LATE_FIX}.get(
            f.check, CHANNELS[f.owner][1])
        return f"{site}: {fix}" if site else fix
    if f.kind in ("mutation", "alias"):
        if origin and origin.function.rpartition(".")[2] in LOAD_METHODS:
            return f"{origin}: copy what {origin.method}() is given before keeping it (copy.deepcopy(state))"
        if origin and f.shares:
            return f"{origin}: return a copy of {_within(f.shares)} from {origin.method}(), not the live object"
        if origin:
            return f"{origin}: return a copy from {origin.method}(), not live state"
        if site:
            return f"{site}: keep a copy of what was handed over here (copy.deepcopy(...)), not the live state"
    code = bug.location
    return f"{code}: {f.hint}" if code and f.hint else f.hint


def _copied_gist(bug: Bug) -> str:
    """A cached value edited after it was handed out, or a part a shallow copy shares changed."""
    f, site = bug.first, bug.site
    at = f" at {site}" if site else ""
    if f.check == "fixture":
        return f"{f.owner} hands every test that asks one object; it was edited by an earlier test: {bug.change}"
    if f.check in CACHE_CHECKS:
        return f"{f.owner} handed out {f.label or 'a cached value'}{at}; it was edited afterwards: {bug.change}"
    return f"{f.owner}{at} shares {f.shares or f.path} with the original; it changed while both were alive: " \
        f"{bug.change}"


def _copied_fix(bug: Bug) -> str:
    f, origin, site = bug.first, bug.origin, bug.site
    if f.check == "fixture":
        return f.hint
    if f.check in CACHE_CHECKS:
        made = f", or return an immutable value from {origin.function.rpartition('.')[2]}() ({origin})" \
            if origin else ", or return an immutable value"
        return f"{site or origin}: copy the cached value before editing it (copy.deepcopy){made}"
    part = f.shares.partition(".")[2] or f.path.lstrip(".")
    return f"{site}: give the copy its own {part} (copy.deepcopy, or a new container for {part}), " \
        "not the original's"


def counts(bugs: Sequence[Bug], noun: str = "test") -> str:
    """``1 bug (118 occurrences in 2 schedules)``."""
    if not bugs:
        return "no bugs"
    occurrences = sum(len(b.occurrences) for b in bugs)
    where = len({t for b in bugs for t in b.tests})
    text = f"{_n(len(bugs), 'bug')} ({_n(occurrences, 'occurrence')}"
    return text + (f" in {_n(where, noun)})" if where else ")")


def seen_by(bug: Bug) -> str:
    return ", ".join(f"{CHECKS.get(check, check)} ({n})" for check, n in bug.checks.most_common())


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def in_checkout(code: Code | None, root: str | None = None) -> Code | None:
    """*code* if its file is a relative path to a file under *root* (the current directory): a line to annotate."""
    if code is None or os.path.isabs(code.file):
        return None
    return code if os.path.isfile(os.path.join(root or os.getcwd(), code.file)) else None
