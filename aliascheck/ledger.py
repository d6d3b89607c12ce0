"""The handover ledger: what was handed over, when, by whom, and whether it changed.

A record is made the moment state leaves its owner (in the thread where that
happens: a Prefetcher's worker, not the consumer) and holds the snapshot object
with its fingerprint. Later checks compare the object as it is now:

- ``handover``: the same object handed over again, changed, while an earlier
  keeper still holds it (a source returning its live dict);
- ``delivery``: a snapshot made in a worker reaching the consumer;
- ``reentry``: a snapshot coming back through ``reset``/``load_state_dict``;
- ``teardown``/``harness``: after the owner was stepped ahead.

Only what someone other than the owner and the ledger still holds is judged
(the canonical fix ``copy.deepcopy(model.state_dict())`` drops the handed-over
dict at once). What was *loaded* into a node, and what the user asked to
``watch``, is judged whoever holds it: a node must not write into the caller's
checkpoint, and a watched object was named on purpose.

Worker threads only append to the ledger; the pytest plugin drains it in the
test's own thread, so findings land on the test that caused them.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import os
import threading
import types
import weakref
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import aliascheck.probe as probe
import aliascheck.sites as sites

from .diff import Change, diff
from .findings import HINTS, Finding, Handover
from .fingerprint import Fingerprint, fingerprint
from .shadow import qualname_of

MAX_PATHS = 20  # changed paths reported per snapshot; the rest are counted


@dataclass(frozen=True, slots=True)
class Settings:
    probe_aliases: bool = True
    ignore: tuple[str, ...] = ()
    strict: bool = False


class Record:
    __slots__ = ("handover", "obj", "fp", "owner", "nested", "always", "flagged", "aliases")

    def __init__(self, handover: Handover, obj: Any, fp: Fingerprint, owner: Any, always: bool) -> None:
        self.handover = handover
        self.obj = obj
        self.fp = fp
        self.owner = _weak(owner)
        self.nested: list[tuple[int, str, str]] = []  # (id, owner type, label) of inner state_dicts
        self.always = always  # judged whoever holds it (loaded, watched)
        self.flagged = False
        self.aliases: list[tuple[str, str]] = []


def _weak(obj: Any) -> Any:
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: None


@dataclass
class Stats:
    handovers: int = 0
    checked: int = 0
    flagged: int = 0
    unverifiable: int = 0
    owners: Counter = field(default_factory=Counter)

    def merge(self, other: Stats) -> None:
        self.handovers += other.handovers
        self.checked += other.checked
        self.flagged += other.flagged
        self.unverifiable += other.unverifiable
        self.owners.update(other.owners)


class Ledger:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.pid = os.getpid()
        self.lock = threading.RLock()
        self.records: dict[int, Record] = {}
        self.buffers: dict[int, Record] = {}  # id of a tensor/array -> the record it was last handed over in
        self.findings: deque[Finding] = deque()
        self.stats = Stats()
        self.test: str | None = None
        self.recording = False
        self.owning = False  # nodes built now belong to the running test
        self.test_thread: int | None = None
        self.roots: dict[int, Any] = {}
        # owner -> the test that built it; a leftover worker of an earlier test's
        # node must not put its handovers on the test that happens to run now.
        self.born: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
        self.extra_ignore: tuple[str, ...] = ()
        self._probed: set[tuple[type, str, str]] = set()
        self._labels: dict[int, str] = {}
        self._label_counts: Counter = Counter()
        self._reported_opaque: set[tuple[str, str]] = set()
        self._older_threads: set[int | None] = set()

    # -- lifecycle -------------------------------------------------------
    def begin(self, test: str | None, ignore: tuple[str, ...] = ()) -> None:
        with self.lock:
            self.records.clear()
            self.buffers.clear()
            self.roots.clear()
            self.test, self.extra_ignore = test, ignore
            self._probed.clear()
            self._labels.clear()
            self._label_counts.clear()
            self.test_thread = threading.get_ident()
            # Workers already running belong to earlier tests (or to no test at all).
            self._older_threads = {t.ident for t in threading.enumerate()} - {self.test_thread}
            self.recording = True

    def end(self) -> None:
        with self.lock:
            self.recording = False
            self.owning = False
            self.records.clear()
            self.buffers.clear()
            self.roots.clear()

    def drain(self) -> list[Finding]:
        """Take the findings so far, adding alias warnings for records that never changed."""
        with self.lock:
            # A risk is worth a warning only where no change was proven for that owner.
            changed = {f.label for f in self.findings if f.kind == "mutation"}
            for rec in self.records.values():
                if (
                    rec.aliases
                    and not rec.flagged
                    and rec.handover.label not in changed
                    and (rec.always or self._kept(rec))  # a dropped snapshot is no risk
                ):
                    self._alias_findings(rec)
                    changed.add(rec.handover.label)
                rec.aliases = []
            out = list(self.findings)
            self.findings.clear()
        return out

    # -- recording -------------------------------------------------------
    def label(self, owner: Any) -> str:
        key = id(owner)
        label = self._labels.get(key)
        if label is None:
            name = type(owner).__name__
            self._label_counts[name] += 1
            label = self._labels[key] = f"{name}#{self._label_counts[name]}"
        return label

    def note_root(self, node: Any) -> None:
        if self.recording and threading.get_ident() == self.test_thread:
            self.roots.setdefault(id(node), node)

    def note_created(self, node: Any) -> None:
        if self.owning:
            try:
                self.born[node] = self.test
            except TypeError:  # unhashable or not weakly referenceable: never a root
                pass

    def built_now(self, node: Any) -> bool:
        try:
            return self.born.get(node, False) == self.test
        except TypeError:
            return False

    def _stale(self, owner: Any) -> bool:
        """A handover that belongs to an earlier test: its owner was built then, or it
        comes from a worker thread that was already running when this test began."""
        try:
            if owner in self.born:
                return self.born[owner] != self.test
        except TypeError:  # unhashable or not weakly referenceable: judge by thread alone
            pass
        return threading.get_ident() in self._older_threads

    def handover(
        self, obj: Any, owner: Any, kind: str, nested: list | None = None, local_refs: int = 2, always: bool = False
    ) -> None:
        """Record *obj* as handed over by *owner*. *local_refs*: the caller's references to it."""
        if not self.recording or os.getpid() != self.pid or obj is None or self._stale(owner):
            return
        fp = fingerprint(obj)
        owner_type = type(owner)
        site, stack = sites.where()
        # A string owner is a name the user gave (the fixture's watch(obj, owner="cache")).
        owner_name = owner if isinstance(owner, str) else qualname_of(owner_type)
        with self.lock:
            self.stats.handovers += 1
            self.stats.owners[owner_name] += 1
            prev = self.records.get(id(obj))
            if prev is not None and prev.obj is obj:
                self._rehandover(prev, fp, local_refs)
                return
            label = owner if isinstance(owner, str) else self.label(owner)
            rec = Record(
                Handover(owner_name, label, kind, site, stack, threading.current_thread().name, self.test),
                obj, fp, owner, always=always,
            )
            if nested:
                rec.nested = nested
            self.records[id(obj)] = rec
            self._note_unverifiable(rec)
            if fp.detail is not None and b"BufferToken" in fp.detail:
                self._index_buffers(rec)
        if (
            self.settings.probe_aliases
            and (owner_type, kind, site) not in self._probed
            and not probe.trusted(owner_type)
        ):
            self._probed.add((owner_type, kind, site))
            rec.aliases = probe.aliases(obj, owner, rec.handover.label)

    def _rehandover(self, prev: Record, fp: Fingerprint, local_refs: int) -> None:
        if prev.flagged or prev.fp.digest == fp.digest:
            return
        if self._kept(prev, local_refs):
            self.stats.checked += 1
            self._judge(prev, fp, "handover")
        else:  # nobody kept the earlier snapshot: the new one is the baseline now
            prev.fp = fp

    def loaded(self, state: Any, node: Any, kind: str) -> None:
        """Check what comes back through reset/load_state_dict, then watch it as the caller's."""
        if not self.recording or os.getpid() != self.pid or state is None:
            return
        for _, part in probe.parts(state, "", 6, False):
            if not self.verify(part, "reentry") and part is not state:
                self._verify_buffer(part)
        with self.lock:
            known = self.records.get(id(state))
            if known is not None and known.obj is state:
                # A handed-over snapshot loaded straight into another node (an optimizer's
                # state_dict() transplanted): whoever holds it now, it must not change.
                known.always = True
                return
            site, stack = sites.where()
            rec = Record(
                Handover(qualname_of(type(node)), self.label(node), kind, site, stack,
                         threading.current_thread().name, self.test),
                state, fingerprint(state), node, always=True,
            )
            self.records[id(state)] = rec

    def _index_buffers(self, rec: Record) -> None:
        """Remember which record each tensor/array of a snapshot was last handed over in.

        ``best = model.state_dict().copy()`` is a new dict of the same live tensors: the
        dict that was handed over is dropped, the tensors come back inside the copy.
        """
        for path, part in probe.parts(rec.obj, "", 6, False):
            if path and probe.is_buffer(part):
                self.buffers[id(part)] = rec

    def _verify_buffer(self, part: Any) -> None:
        """A tensor coming back inside another container: re-judge the snapshot it left in."""
        rec = self.buffers.get(id(part)) if probe.is_buffer(part) else None
        if rec is None or rec.flagged:
            return
        fp = fingerprint(rec.obj)  # the record keeps its container, so the tensor is the same one
        with self.lock:
            self.stats.checked += 1
            if not rec.flagged and fp.digest != rec.fp.digest:
                self._judge(rec, fp, "reentry")

    def watch(self, obj: Any, owner: Any, kind: str = "watch") -> None:
        self.handover(obj, owner, kind, local_refs=1, always=True)

    # -- checks ----------------------------------------------------------
    def verify(self, obj: Any, check: str) -> bool:
        """Compare *obj* with its handover record, if it has one; True if it changed."""
        rec = self.records.get(id(obj))
        if rec is None or rec.obj is not obj or rec.flagged or not self.recording:
            return False
        fp = fingerprint(obj)
        with self.lock:
            self.stats.checked += 1
            return not rec.flagged and fp.digest != rec.fp.digest and self._judge(rec, fp, check)

    def verify_all(self, check: str) -> None:
        with self.lock:
            records = list(self.records.values())
        for rec in records:
            if rec.flagged or not (rec.always or self._held_elsewhere(rec, 0)):
                continue
            fp = fingerprint(rec.obj)
            with self.lock:  # a worker's re-handover may have judged it meanwhile
                self.stats.checked += 1
                if not rec.flagged and fp.digest != rec.fp.digest and (rec.always or self._kept(rec)):
                    self._judge(rec, fp, check)

    def _held_elsewhere(self, rec: Record, local_refs: int) -> bool:
        """A cheap first look: more references than the record, the caller and the owner hold."""
        owner = rec.owner()
        owner_refs = probe.references_from(owner, rec.obj) if owner is not None else 0
        # Less the record's own reference, the caller's locals and the owner's attributes.
        return probe.refcount(rec.obj) - 1 - local_refs - owner_refs > 0

    def _kept(self, rec: Record, local_refs: int = 0) -> bool:
        """Whether a container or object other than the owner keeps *rec*'s snapshot.

        The reference count also counts locals of code running in other threads right
        now (a fixed node's worker copying the snapshot it was just given): transient,
        not a keeper. ``gc.get_referrers`` sees containers, attribute dicts and queues,
        never a running function's locals; the locals of this thread's callers (a test
        body holding ``state`` while it calls ``check_node``) are looked at directly.
        Both scan, so they only confirm what would otherwise become a finding.
        """
        if not self._held_elsewhere(rec, local_refs):
            return False
        if sites.held_by_callers(rec.obj):
            return True
        ignore = {id(rec)}
        owner = rec.owner()
        if owner is not None:
            with contextlib.suppress(TypeError):
                attrs = vars(owner)
                ignore.add(id(attrs))
                ignore.update(id(v) for v in attrs.values() if isinstance(v, (dict, list, tuple)))
        return any(
            id(ref) not in ignore and not isinstance(ref, types.FrameType) for ref in gc.get_referrers(rec.obj)
        )

    def _judge(self, rec: Record, fp: Fingerprint, check: str) -> bool:
        changes = [c for c in self._own_changes(rec, diff(rec.fp, fp)) if not self._ignored(rec, c)]
        if not changes:
            rec.fp = fp
            return False
        rec.flagged = True
        self.stats.flagged += 1
        owners = self._nested_owners(rec)
        hint = HINTS["mutation"]
        if rec.aliases:
            hint = "; ".join(f"{o} is {p or '<root>'}" for p, o in rec.aliases) + f" -- {hint}"
        shown = changes[:MAX_PATHS]
        for i, change in enumerate(shown):
            owner, label = _owner_of(change.path, owners, rec.handover)
            self.findings.append(Finding(
                "mutation", owner, change.path, change.before, change.after, rec.handover.site, check,
                self.test, label, "error", hint, rec.handover.stack,
                len(changes) - len(shown) if i == len(shown) - 1 else 0, rec.handover.thread,
            ))
        return True

    def _own_changes(self, rec: Record, changes: list[Change]) -> list[Change]:
        """Leave changes under a part that has a record of its own to that record."""
        if len(self.records) == 1:
            return changes
        foreign = [
            path for path, part in probe.parts(rec.obj, "", 6, False)
            if path and id(part) in self.records and self.records[id(part)].obj is part
        ]
        return [c for c in changes if not any(c.path.startswith(p) for p in foreign)]

    def _nested_owners(self, rec: Record) -> list[tuple[str, str, str]]:
        if not rec.nested:
            return []
        # Modules hand one destination dict down to their children: that is the outer owner's.
        ids = {i: (o, lbl) for i, o, lbl in rec.nested if i != id(rec.obj)}
        found = [(path, *ids[id(part)]) for path, part in probe.parts(rec.obj, "", 8, False) if id(part) in ids]
        return sorted(found, key=lambda e: -len(e[0]))

    def _ignored(self, rec: Record, change: Change) -> bool:
        return self._ignored_path(rec.handover.owner, change.path)

    def _ignored_path(self, owner: str, path: str) -> bool:
        patterns = self.settings.ignore + self.extra_ignore
        subject = f"{owner}:{path}"
        return any(_match(path, p) or _match(subject, p) for p in patterns)

    def _alias_findings(self, rec: Record) -> None:
        severity = "error" if self.settings.strict else "warning"
        for path, owner_path in rec.aliases:
            if self._ignored_path(rec.handover.owner, path or "<root>"):
                continue
            self.findings.append(Finding(
                "alias", rec.handover.owner, path or "<root>", owner_path, "shared, not changed (yet)",
                rec.handover.site, "alias-probe", self.test, rec.handover.label, severity, HINTS["alias"],
                rec.handover.stack, thread=rec.handover.thread,
            ))

    def _note_unverifiable(self, rec: Record) -> None:
        if rec.fp.verifiable:
            return
        self.stats.unverifiable += 1
        for path, what in rec.fp.unverifiable()[:MAX_PATHS]:
            key = (rec.handover.owner, path)
            if key not in self._reported_opaque:
                self._reported_opaque.add(key)
                self.findings.append(Finding(
                    "unverifiable", rec.handover.owner, path or "<root>", what, "not checked",
                    rec.handover.site, "handover", self.test, rec.handover.label, "info",
                    HINTS["unverifiable"], rec.handover.stack,
                ))


def _match(text: str, pattern: str) -> bool:
    """fnmatch with ``*`` and ``?`` only: ``[`` is literal, as in every path we print."""
    return fnmatch.fnmatchcase(text, pattern.replace("[", "[[]"))


def _owner_of(path: str, owners: list[tuple[str, str, str]], handover: Handover) -> tuple[str, str]:
    for prefix, owner, label in owners:
        if path.startswith(prefix):
            return owner, label
    return handover.owner, handover.label


# The active ledger. A stack: pytester runs pytest inside pytest, each session
# pushes its own and must pop exactly its own.
_stack: list[Ledger] = []
current: Ledger | None = None


def push(ledger: Ledger) -> None:
    global current
    _stack.append(ledger)
    current = ledger


def pop(ledger: Ledger) -> None:
    global current
    if not _stack or _stack[-1] is not ledger:
        raise RuntimeError("aliascheck: ledger stack out of order (a nested session did not clean up)")
    _stack.pop()
    current = _stack[-1] if _stack else None
