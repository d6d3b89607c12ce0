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

This module records, looks up and asks: whether a record is judged and what in a change is a
finding is decided by :mod:`aliascheck.judge` (rules *Shared*, *Held*, *Followed*, *Loads*,
*Kept in pieces*).
"""

from __future__ import annotations

import os
import reprlib
import sys
import threading
import weakref
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import aliascheck.handlers as handlers
import aliascheck.judge as judge
import aliascheck.keepers as keepers
import aliascheck.probe as probe
import aliascheck.sites as sites

from .config import match
from .diff import Change
from .findings import Finding
from .fingerprint import Fingerprint, fingerprint
from .judge import SHARED_DEPTH, SHARED_LIMIT
from .kinds import LOAD_METHODS, STATE_METHODS, kind_of
from .records import Record, Settings, Snapshot, Stats, weak
from .shadow import qualname_of

MAX_PATHS = 20  # changed paths reported per snapshot; the rest are counted
MAX_TEXT = 200  # characters of a value shown in a finding
_CHECKPOINTS = (dict, list, tuple)  # what a checkpoint is built as, subclasses too (OrderedDict)
PRUNE_AT = 1024  # records kept before the first sweep for snapshots nobody holds any more
_UNSET = (None, 0)  # a parts entry that is not there
ADOPT_BYTES = 64 * 1024  # a loaded state's fingerprint detail up to which what its node adopted is noted


class Ledger:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.pid = os.getpid()
        self.lock = threading.RLock()
        self.records: dict[int, Record] = {}
        # (thread, id(state)) -> a load's proof that its tensors are unwritten (handlers.unwritten_proof)
        self._loading: dict[tuple[int, int], list[tuple[Any, ...]]] = {}
        # Live parts of snapshots -> the record they were last handed over in: what an inner
        # state method returned (by id), and tensors/arrays (by the memory they view).
        self.parts: dict[Any, tuple[Record, int]] = {}  # key -> (record, id of the part inside its snapshot)
        self.findings: deque[Finding] = deque()
        self.stats = Stats()
        self.test: str | None = None
        self.recording = False
        self.owning = False  # nodes built now belong to the running test
        self.test_thread: int | None = None
        self.roots: dict[int, Any] = {}
        # owner -> the test that built it; a leftover worker of an earlier test's
        # node must not put its handovers on the test that happens to run now.
        # id of a node built during a test -> (a weak reference to it, that test). By identity: a
        # WeakKeyDictionary would hash the node, and a node's __hash__ is the program's code.
        self.born: dict[int, tuple[Any, str | None]] = {}
        self.extra_ignore: tuple[str, ...] = ()
        self._probed: dict[tuple[type, str, Any], list[tuple[str, str]]] = {}
        self._labels: dict[int, str] = {}
        self._label_counts: Counter = Counter()
        self._reported_opaque: set[tuple[str, str]] = set()
        self._older_threads: set[int | None] = set()
        # Where findings also go as they are made (a child process's spool); and the
        # process they were made in, named on each finding ("" in the test process).
        self.sink: Callable[[list[Finding]], None] | None = None
        self.process = ""
        self._prune_at = PRUNE_AT
        # id(node) -> the record of the state it adopted parts of at its last load
        self.adopters: dict[int, Record] = {}
        self._last: dict[int, Record] = {}  # id(owner) -> its last handover's record
        # A test function's names read for the last time (:meth:`last_used`): id(frame) -> its names no
        # longer read (by id: holding the frame would keep its locals alive); and the ids of the values
        # they named, a container among them looked through (a checkpoint's sub-dict a load was given is
        # held by the checkpoint the name let go of).
        self.released: dict[int, frozenset[str]] = {}
        self.released_values: set[int] = set()

    # -- lifecycle -------------------------------------------------------
    def begin(self, test: str | None, ignore: tuple[str, ...] = ()) -> None:
        with self.lock:
            self._prune_at = PRUNE_AT
            self.records.clear()
            self.adopters.clear()
            self._last.clear()
            self.parts.clear()
            self.roots.clear()
            self.test, self.extra_ignore = test, ignore
            self.released.clear()
            self.released_values.clear()
            self._probed.clear()
            self._labels.clear()
            self._label_counts.clear()
            self.test_thread = threading.get_ident()
            # Workers already running belong to earlier tests (or to no test at all).
            self._older_threads = {t.ident for t in threading.enumerate()} - {self.test_thread}
            self.recording = True

    def _prune(self) -> None:
        """Forget the records of snapshots that nobody but their owner holds any more.

        A node handed over at every step (a Prefetcher's worker snapshotting its source
        60k times in one test) would otherwise make every look at "who keeps this" a walk
        over all of them. Such a snapshot is not judged anyway; the next handover of the
        same object starts a new baseline, as an unkept re-handover does. The live parts
        it indexed stay followed. The sweep runs when the count doubles: amortised O(1).
        """
        for key, rec in list(self.records.items()):
            # Held by this table alone (getrefcount's argument aside): nobody can change it any more,
            # dropped with no look at the owner.
            if rec.adopter is not None and not rec.gone() or (rec.others() > 0 and (
                    rec.always or keepers.held_elsewhere(rec, 0))) or judge.buffer_pieces(rec, owned=False):
                continue
            del self.records[key]
            self._unindex(rec)
        self._prune_at = max(PRUNE_AT, 2 * len(self.records))

    def end(self) -> None:
        with self.lock:
            self.recording = False
            self.owning = False
            self.records.clear()
            self.adopters.clear()
            self._last.clear()
            self.released.clear()
            self.released_values.clear()
            self.parts.clear()
            self.roots.clear()

    def drain(self) -> list[Finding]:
        """Take the findings so far, adding alias warnings for records that never changed."""
        with self.lock, keepers.collecting():
            # A risk is worth a warning only where no change was proven for that owner type.
            changed = {f.owner for f in self.findings if f.kind == "mutation"}
            for rec in self.records.values():
                changed |= judge.alias_warnings(self, rec, changed)
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
        """A node the harness may step at the test's end. Only one built during the test is ever
        stepped (:meth:`built_now`), which takes a weak reference: a node that allows none is not kept
        here (it would live past the program's last reference for nothing: pyparsing's ParseResults)."""
        if (self.recording and threading.get_ident() == self.test_thread
                and type(node).__weakrefoffset__):
            self.roots.setdefault(id(node), node)

    def note_created(self, node: Any) -> None:
        if self.owning:
            key, born = id(node), self.born
            try:
                ref = weakref.ref(node, lambda _ref: born.pop(key, None) if born.get(key, (None,))[0] is _ref
                                  else None)
            except TypeError:  # not weakly referenceable: never a root
                return
            born[key] = (ref, self.test)

    def _born_in(self, node: Any) -> tuple[bool, str | None]:
        """(whether *node* was built during a test, which one)."""
        entry = self.born.get(id(node))
        if entry is None or entry[0]() is not node:
            return False, None
        return True, entry[1]

    def built_now(self, node: Any) -> bool:
        known, test = self._born_in(node)
        return known and test == self.test

    def _stale(self, owner: Any) -> bool:
        """A handover that belongs to an earlier test: its owner was built then, or it
        comes from a worker thread that was already running when this test began."""
        known, test = self._born_in(owner)
        if known:
            return test != self.test
        return threading.get_ident() in self._older_threads

    def handover(
        self, obj: Any, owner: Any, kind: str, nested: list | None = None, local_refs: int = 2, always: bool = False,
        handles: bool = False,
    ) -> None:
        """Record *obj* as handed over by *owner*. *local_refs*: the caller's references to it. *handles*:
        live objects the caller asked for (``state_dict(keep_vars=True)``): recorded, never judged.

        *nested*: ``(part, inner owner)`` for each state_dict() an inner owner made during
        this call; changes under a part are blamed on its owner.
        """
        if not self.recording or os.getpid() != self.pid or obj is None or self._stale(owner):
            return
        if self.adopters and (adopted := self.adopters.get(id(owner))) is not None:
            judge.adopted_changed(self, adopted, "adopted")  # the node's next state call: what it adopted
        # Inner state methods that returned obj itself (get_state() under state_dict()) are
        # the same handover; the list must not hold obj, or it would count as a keeper.
        # A plain loop: a comprehension naming obj would make it a cell, and a cell left
        # in a frame cycle also looks like a keeper to gc.get_referrers until a collection.
        inner = []
        for part, inner_owner in nested or ():
            if part is not obj:
                inner.append((part, inner_owner))
        part = inner_owner = None  # the loop's names would count as references to the last part
        if nested:
            nested.clear()
        # Fresh all the way down (a new dict of atoms, new containers, new objects of plain classes,
        # tensors that own their memory: correct code's common case, at every item): no part of it is
        # live, so nothing about it can become a finding. Counted, not recorded: no fingerprint, no
        # capture, no delivery check. The callers' references (*local_refs*, this parameter included)
        # and getrefcount's argument: the owner keeping it would be one more. An inner state is
        # referred to by *inner* too.
        # Fresh but for tensors or arrays that someone else refers to (a generator state the node
        # keeps and hands out again): only those can change by anyone's hand but the holder's, and
        # a holder's edit of its own new containers is never a finding, so a check compares them
        # alone (:meth:`_live_unchanged`). The fingerprint below is still the baseline a report diffs.
        shared: list[Any] = []
        if not always and sys.getrefcount(obj) == local_refs + 1 and probe.fresh(
                obj, {id(part) for part, _ in inner} if inner else frozenset(), shared, instances=True):
            if not shared:
                name = owner if isinstance(owner, str) else qualname_of(type(owner))
                with self.lock:
                    self.stats.handovers += 1
                    self.stats.owners[name] += 1
                return
            live = [(part, _reduced(part)) for part in shared]
        else:
            live = None
        del shared
        buffers: list[Any] = []
        # New but for live buffers: only they can change in a way that matters, and their reductions are
        # the check; the fingerprint to diff with is made if one of them ever changes (Record._as_handed).
        fp = fingerprint(obj, seen=buffers, seen_types=probe.buffer_types()) if live is None else None
        owner_type = type(owner)
        where = sites.capture()
        sites.hold_test_frame(sys._getframe(1))  # its names may hold obj until the test's end check
        # A string owner is a name the user gave (the fixture's watch(obj, owner="cache")).
        owner_name = owner if isinstance(owner, str) else qualname_of(owner_type)
        with self.lock:
            self.stats.handovers += 1
            self.stats.owners[owner_name] += 1
            prev = self.records.get(id(obj))
            if prev is not None and prev.obj is obj:  # recorded, so not new: fingerprinted above
                assert fp is not None
                judge.rehandover(self, prev, fp, local_refs)
                return
            judge.earlier_inside(self, obj)
            label = owner if isinstance(owner, str) else self.label(owner)
            rec = Snapshot(owner_name, label, kind, where, threading.current_thread().name, self.test,
                           obj, fp, owner, always=always)
            rec.nested = [(id(part), qualname_of(type(o)), self.label(o), type(o)) for part, o in inner]
            if handles:
                rec.handles = True
            if live is not None:
                rec.live = live
            self.records[id(obj)] = rec
            self._drop_previous(id(owner), rec)
            if live is None or any(handlers.unreadable(then) for _, then in live):
                self._note_unverifiable(rec)
            if live is None:
                self._index_parts(rec, inner, buffers)
            else:  # the rest is new: only a holder can change it, so no load of it is judged again
                self._index_parts(rec, (), [part for part, _ in live])
            if not rec.indexed:  # nothing followed through it: it lives as long as the program holds it
                rec.let_go()
            if len(self.records) >= self._prune_at:
                self._prune()
        if self.settings.probe_aliases and not isinstance(owner, str):
            self._probe(rec, owner, kind, where.key, inner)

    def _drop_previous(self, owner: int, rec: Record) -> None:
        """The owner's previous snapshot, if nobody but this table holds it any more: dropped now, as
        :meth:`_prune` would later (a state handed over at every item and not kept would otherwise
        pile up until the next sweep, and every garbage collection would walk it)."""
        prev = self._last.get(owner)
        self._last[owner] = rec
        # Nobody else can reach it to change it (or it died: a weakly held one leaves its record to the sweep),
        # nor keeps a live buffer of it (rule *Kept in pieces*, judged at the end: by reference count here).
        if (prev is not None and prev is not rec and not prev.always and prev.adopter is None
                and prev.others() == 0 and self.records.get(id(prev.obj)) is prev
                and not judge.buffer_pieces(prev, owned=False)):
            del self.records[id(prev.obj)]
            self._unindex(prev)

    def _unindex(self, rec: Record) -> None:
        """Forget the indexed parts of a dropped record that nobody else holds either.

        Such a part cannot come back through a load. Left indexed, it would keep its record and
        so the whole snapshot alive: a node handed over at every item (torchdata's weighted
        sampler, five inner states a snapshot) piled up 300k entries in one test, and every
        garbage collection walked their snapshots.
        """
        parts = self.parts
        for key, part in rec.indexed:
            # Held by the snapshot, this list's pair, the loop's name and getrefcount's argument.
            if sys.getrefcount(part) <= 4 and parts.get(key, _UNSET)[0] is rec:
                del parts[key]

    def _probe(self, rec: Record, owner: Any, kind: str, site: Any, inner: list[tuple[Any, Any]]) -> None:
        """Name the live objects the snapshot shares with its owner (and inner owners).

        The walk runs once per (owner type, kind, site): later handovers of the same
        code share the same live attributes, so they reuse its answer to name a change.
        Only the first one's answer can become an ``alias`` warning.
        """
        key = (type(owner), kind, site)
        known = self._probed.get(key)
        if known is not None:
            rec.shares = known
            return
        found: list[tuple[str, str]] = []
        if not probe.trusted(type(owner)):
            found += probe.aliases(rec.obj, owner, type(owner).__name__)
        if inner:
            where = {id(part): path for path, part in probe.parts(rec.obj, "", 8, False)}
            for part, inner_owner in inner:
                if id(part) in where and not probe.trusted(type(inner_owner)):
                    prefix = where[id(part)]
                    found += [(prefix + p, o) for p, o in probe.aliases(part, inner_owner, type(inner_owner).__name__)]
        self._probed[key] = rec.shares = rec.aliases = found

    def loaded(self, state: Any, node: Any, kind: str, after: bool = False) -> Fingerprint | None:
        """Check what comes back through reset/load_state_dict, then record it as the caller's.

        Returns the state's fingerprint as the load begins, for :meth:`after_load` (*after*: it will
        be called, or :meth:`load_raised`: what proves the tensors unwritten is kept for it).
        """
        if not self.recording or os.getpid() != self.pid or state is None:
            return None
        if self.adopters and (adopted := self.adopters.pop(id(node), None)) is not None and adopted.obj is not state:
            judge.adopted_changed(self, adopted, "adopted")  # loading anew: what it adopted at its last load
        buffers: list[Any] = []  # the tensors/arrays in it, met by the fingerprint's own pass
        reductions: list[Any] = []
        # after_load's baseline too
        now = fingerprint(state, seen=buffers, seen_types=probe.buffer_types(), reductions=reductions)
        # What proves a tensor unwritten by the load, so that after_load reuses its read (by thread: a
        # load is one call in one thread).
        if after:
            self._loading[(threading.get_ident(), id(state))] = handlers.unwritten_proof(buffers, reductions)
        del reductions
        back: list[tuple[Record, int]] = []
        # Nothing inside to find unless parts are indexed or a record other than the state's exists.
        if self.parts or len(self.records) > (id(state) in self.records):
            parts = probe.reachable(state)
            # Filters run at C speed: only parts handed over before are looked at. A record
            # keeps its object, so an id found among the records' keys is that object's.
            recorded, indexed = self.records.keys(), self.parts.keys()
            for key in set(filter(recorded.__contains__, map(id, parts))):
                self.verify(self.records[key].obj, "reentry", now if key == id(state) else None)
            back = [self.parts[key] for key in set(filter(indexed.__contains__, map(id, parts))) - {id(state)}]
            if not now.exact:  # pickling failed, a walk made the fingerprint: find the buffers by walking too
                types_ = probe.buffer_types()
                buffers = [part for part in parts if isinstance(part, types_)]
            keys = map(probe.memory_key, buffers)
            back += [self.parts[key] for key in keys if key in self.parts]
        else:
            self.verify(state, "reentry", now)
        again: dict[Record, set[int]] = {}
        for rec, part in back:
            again.setdefault(rec, set()).add(part)
        for rec, ids in again.items():
            judge.followed(self, rec, ids)
        with self.lock:
            known = self.records.get(id(state))
            if known is not None and known.obj is state:
                # A handed-over snapshot loaded straight into another node (an optimizer's
                # state_dict() transplanted, copy.copy through __getstate__/__setstate__): the
                # parts that node kept are shared by two live owners, whoever else holds them.
                known.adopter = weak(node)
                if known.live is not None:  # its new parts are that node's live state now: checked whole
                    known.fp = known.fp  # made now, from its buffers as handed over
                    known.live = None
                return now
            # Judged while the caller (or another node) holds it too, as any snapshot:
            # a node that adopted a checkpoint nobody else keeps may write into it.
            rec = Snapshot(qualname_of(type(node)), self.label(node), kind, sites.capture(),
                           threading.current_thread().name, self.test, state, now, node, always=False)
            rec.let_go()
            self.records[id(state)] = rec
            return now

    def after_load(self, state: Any, node: Any, before: Fingerprint, local_refs: int = 2,
                   passing: frozenset[int] = frozenset(), outermost: bool = False) -> None:
        """The load itself must not write into the caller's state (``assign=True`` setting
        ``sd._metadata``): compared right after the loading method returns (rule *Loads*).
        *local_refs*: the references the load's recording holds to *state*, this parameter's included."""
        proof = self._loading.pop((threading.get_ident(), id(state)), None)
        rec = self.records.get(id(state))
        if rec is None or rec.obj is not state or rec.flagged:
            return
        # A state the caller made and this node kept nothing of (told when the node's own load method
        # returns, not an override's ``super().reset(state)``): only the caller holds it, whose own edits
        # are never a finding, so nothing is left to judge once the load is judged. Not held past the
        # load when it cannot be held weakly (a plain dict): the program's ``del`` frees it.
        forget = (self._note_adopted(rec, node) and outermost and not rec.adopted and rec.kind in LOAD_METHODS
                  and isinstance(rec, Snapshot) and not rec.weakly())
        try:
            fp = fingerprint(state, then=handlers.still_unwritten(proof) if proof else None)
            del proof
            with self.lock:
                self.stats.checked += 1
                if fp.digest == before.digest or rec.flagged:
                    return
                changes = judge.load_wrote(self, rec, node, before, fp, local_refs, passing)
                if not changes:
                    return
                site, stack = sites.where()  # the load call
                found = self.report(
                    "mutation", changes, owner=qualname_of(type(node)), label=self.label(node),
                    site=site, stack=stack, check="load",
                    # The load's own line, even in a library (torch's CyclicLR.load_state_dict pops a
                    # key from the caller's dict): one bug there, not one per caller.
                    origin=sites.origin(type(node), LOAD_METHODS, users_only=False),
                )
                rec.flagged = rec.flagged or bool(found)
        finally:
            if forget:
                with self.lock:
                    if self.records.get(id(state)) is rec:
                        del self.records[id(state)]

    def load_raised(self, state: Any) -> None:
        """The load raised: its proof is dropped (it holds the state's tensors)."""
        self._loading.pop((threading.get_ident(), id(state)), None)

    def _note_adopted(self, rec: Record, node: Any) -> bool:
        """What a project's node kept of the state it loaded: judged from now on whether or not the
        node still holds it, at its next state call, at its death and at teardown. Returns whether it
        looked (``rec.adopted`` is then the answer).

        Library nodes (trusted: torch's, torchdata's) keep by design and are judged by what
        they hold at the check, with no walk per load; so is a state larger than
        :data:`ADOPT_BYTES` fingerprinted (the walk would cost more than the load).
        """
        if rec.kind not in LOAD_METHODS or probe.trusted(type(node)) or len(rec.fp.detail or b"") > ADOPT_BYTES:
            return False
        rec.adopted = probe.aliases(rec.obj, node, type(node).__name__, depth=SHARED_DEPTH, limit=SHARED_LIMIT)
        if not rec.adopted:
            return True
        # Ids, not the objects: a reference here would make a holder of the ledger itself.
        where = {path: id(part) for path, part in probe.parts(rec.obj, "", SHARED_DEPTH, False)}
        rec.adopted_parts = {where[path] for path, _ in rec.adopted if path in where}
        self.adopters[id(node)] = rec
        try:
            weakref.finalize(node, self._adopter_gone, id(node), rec)
        except TypeError:  # not weakly referenceable: its next state call and teardown still look
            pass
        return True

    def after_call(self, node: Any) -> None:
        """After a method of a node that adopted part of a loaded state: if it let go of what it
        adopted (``self.buf = self.buf[n:]``), what changed while it held it is its doing, judged
        now; later changes are no longer its own (the caller may edit its checkpoint)."""
        rec = self.adopters.get(id(node))
        if rec is None or rec.flagged or self.records.get(id(rec.obj)) is not rec:
            return
        # Still holding what it adopted, in an attribute or one container down: the common case, at
        # C speed at every call (a dataset's __getitem__ runs per item); only otherwise walk.
        wanted = rec.adopted_parts
        if wanted and wanted <= probe.held_ids(node):
            return
        if probe.aliases(rec.obj, node, type(node).__name__, depth=SHARED_DEPTH, limit=SHARED_LIMIT):
            return  # still holds it: judged as any load, at the next look
        judge.adopted_changed(self, rec, "adopted")
        with self.lock:
            rec.adopted, rec.adopted_parts = [], set()
            if self.adopters.get(id(node)) is rec:
                del self.adopters[id(node)]
            rec.fp = fingerprint(rec.obj)

    def retire(self, rec: Record) -> None:
        """A loaded state its node changed while nobody else held it (judge's *Loads*): no longer
        a snapshot, not judged again. Called under the lock."""
        owner = rec.owner()
        if owner is not None and self.adopters.get(id(owner)) is rec:
            del self.adopters[id(owner)]
        if self.records.get(id(rec.obj)) is rec:
            del self.records[id(rec.obj)]
            self._unindex(rec)

    def _adopter_gone(self, key: int, rec: Record) -> None:
        if self.adopters.get(key) is rec:
            del self.adopters[key]
        if self.recording and os.getpid() == self.pid and self.records.get(id(rec.obj)) is rec:
            judge.adopted_changed(self, rec, "adopted")

    def _index_parts(self, rec: Record, inner: Sequence[tuple[Any, Any]], buffers: list[Any]) -> None:
        """Remember the live parts of a snapshot, to follow them wherever they go.

        ``best = {k: v for k, v in model.state_dict().items()}`` drops the dict that was
        handed over and keeps its live tensors (and a module's live extra-state dict) in
        a container of the holder's own; ``t.detach()`` is a new object over the same
        memory. When such a part comes back through a load, the snapshot it left in is
        judged again.
        """
        indexed: list[tuple[Any, Any]] = []
        for part, _ in inner:
            self.parts[id(part)] = (rec, id(part))
            indexed.append((id(part), part))
        if not buffers and not rec.fp.exact and rec.fp.detail is not None and b"BufferToken" in rec.fp.detail:
            # pickling failed and a walk made the fingerprint: find the buffers by walking too
            types_ = probe.buffer_types()
            buffers = [part for part in probe.reachable(rec.obj) if isinstance(part, types_)]
        for part in buffers:
            if part is not rec.obj:
                key = probe.memory_key(part)
                if key is not None:
                    self.parts[key] = (rec, id(part))
                    indexed.append((key, part))
        if indexed:
            rec.indexed = indexed

    def watch(self, obj: Any, owner: Any, kind: str = "watch") -> None:
        self.handover(obj, owner, kind, local_refs=1, always=True)

    def forget(self, obj: Any) -> None:
        """Drop *obj*'s record, if it has one: ownership passed (a message was received)."""
        with self.lock:
            rec = self.records.get(id(obj))
            if rec is not None and rec.obj is obj:
                del self.records[id(obj)]

    def saved(self, obj: Any) -> None:
        """*obj* is being serialised (``torch.save``, ``pickle.dump``/``dumps``): the file holds the state
        as it is now. A snapshot a state method handed over, inside it or itself, is judged then (rule
        *Saved*): a checkpoint of ``best = model.state_dict()`` written after training went on holds the
        last weights. Loaded states are not judged here (what a load kept is the loading node's). Never
        raises: aliascheck's own failure must not break the user's save."""
        if not self.recording or not self.records or os.getpid() != self.pid:
            return
        try:
            rec = self.records.get(id(obj))
            if rec is not None and rec.obj is obj:
                found = [rec]
            elif issubclass(type(obj), _CHECKPOINTS):  # a checkpoint dict holding one, 3 levels down (ids at C speed)
                recorded = self.records.keys()
                parts = probe.reachable(obj, 3)
                # .get: a worker thread's handover may drop a record meanwhile
                found = [rec for key in set(filter(recorded.__contains__, map(id, parts)))
                         if (rec := self.records.get(key)) is not None]
            else:
                return
            for rec in found:
                if rec.kind not in LOAD_METHODS and not rec.flagged:
                    self.verify(rec.obj, "save")
        except Exception as exc:  # pragma: no cover - aliascheck's own bug
            judge.internal(self, "save", exc)

    def recorded(self, obj: Any) -> bool:
        """Whether *obj* itself has a record now."""
        rec = self.records.get(id(obj))
        return rec is not None and rec.obj is obj

    def holder_wrote(self, obj: Any) -> None:
        """Project code wrote into a part of *obj* through the name that holds it. When *obj* is a
        snapshot a state method handed over (``own = model.state_dict(); own[k].copy_(v)``, the
        partial-load idiom), its holder writes the owner's live state through it: a handle, not a
        snapshot (rule *Who wrote it, for whom*), no longer judged. O(1): one lookup by id."""
        rec = self.records.get(id(obj))
        if rec is not None and rec.obj is obj and rec.kind in STATE_METHODS and not rec.flagged:
            with self.lock:
                if self.records.get(id(obj)) is rec:
                    del self.records[id(obj)]
                    self._unindex(rec)

    # -- checks ----------------------------------------------------------
    def verify(self, obj: Any, check: str, fp: Fingerprint | None = None) -> bool:
        """Compare *obj* (fingerprinted now, or as *fp*) with its handover record, if it has one; True if it changed."""
        rec = self.records.get(id(obj))
        if rec is None or rec.obj is not obj or rec.flagged or rec.handles or not self.recording:
            return False
        if fp is None and rec.live is not None and _live_unchanged(rec):
            with self.lock:
                self.stats.checked += 1
            return False
        fp = fingerprint(obj) if fp is None else fp
        with self.lock:
            self.stats.checked += 1
            return not rec.flagged and fp.digest != rec.fp.digest and judge.snapshot_changed(self, rec, fp, check)

    def last_used(self, obj: Any, frame: Any, name: str) -> None:
        """The test function whose *frame* names *obj* as *name* will not read that name again (the
        marked test's statement after its last use): compared now, and unchanged, that name no longer
        keeps it (rule *Held*: a test's name read before the change saw nothing change)."""
        if not self.recording:
            return
        rec = self.records.get(id(obj))
        if rec is not None and rec.obj is obj and not rec.flagged and self.verify(obj, "last-use"):
            return
        with self.lock:
            self.released[id(frame)] = self.released.get(id(frame), frozenset()) | {name}
            self.released_values.add(id(obj))

    def verify_all(self, check: str) -> None:
        with keepers.collecting():
            self._verify_all(check)

    def _verify_all(self, check: str) -> None:
        with self.lock:
            records = list(self.records.values())
        changed: list[tuple[Record, Fingerprint]] = []
        pieces: list[tuple[Record, Fingerprint]] = []
        for rec in records:
            if rec.flagged:
                continue
            whole = judge.judged(rec)
            # Dropped but for live buffers the ledger follows, which something else refers to: a
            # consumer may keep those (rule *Kept in pieces*: ``{k: v.cpu() for k, v in sd.items()}``).
            if not whole and (not rec.indexed or rec.gone() or not judge.buffer_pieces(rec)):
                continue
            if rec.live is not None and _live_unchanged(rec):
                with self.lock:
                    self.stats.checked += 1
                continue
            fp = fingerprint(rec.obj)
            with self.lock:
                self.stats.checked += 1
            if fp.digest != rec.fp.digest:
                (changed if whole else pieces).append((rec, fp))
        keepers.expect(rec.obj for rec, _ in changed)  # who holds them: one scan of the heap for all
        for rec, fp in changed:
            with self.lock:  # a worker's re-handover may have judged it meanwhile
                if not rec.flagged and fp.digest != rec.fp.digest:
                    judge.held_changed(self, rec, fp, check)
        for rec, fp in pieces:
            with self.lock:
                if not rec.flagged:
                    judge.pieces_changed(self, rec, fp, check)

    def ignored(self, owner: str, path: str) -> bool:
        """Whether an ignore pattern (the session's or the test's marker's) matches ``path`` or ``owner:path``."""
        patterns = self.settings.ignore + self.extra_ignore
        subject = f"{owner}:{path}"
        return any(match(path, p) or match(subject, p) for p in patterns)

    def _note_unverifiable(self, rec: Record) -> None:
        if rec.fp.verifiable:
            return

        fresh = []
        for path, what in rec.fp.unverifiable():
            key = (rec.owner_name, path)
            if key not in self._reported_opaque:
                self._reported_opaque.add(key)
                fresh.append(Change(path, what, "not checked"))
        if fresh:
            self.report("unverifiable", fresh, owner=rec.owner_name, label=rec.label,
                        site=rec.where.site, stack=rec.where.stack, thread=rec.thread,
                        check="handover", origin=judge.origin(rec, rec.owner_type))

    # -- the one producer ----------------------------------------------------
    def report(
        self,
        kind: str,
        changes: Iterable[Change],
        *,
        owner: str,
        check: str,
        label: str = "",
        site: str = "",
        stack: Sequence[str] = (),
        thread: str | None = None,
        severity: str | None = None,
        hint: str = "",
        origin: str = "",
        shares: str = "",
        aliases: Sequence[tuple[str, str]] = (),
    ) -> list[Finding]:
        """Make the findings of one look at one owner's state; every finding is made here.

        Applies the ignore patterns (``*`` and ``?`` only, brackets literal) to the
        path and to ``owner:path``, keeps at most :data:`MAX_PATHS` paths (counting
        the rest in the last one's ``more``), sets the severity (an ``alias`` is an
        error under ``--aliascheck-strict``), counts the stats and puts the findings
        on the running test. *aliases*: (snapshot path, live path) pairs that name
        what a change shares.
        Returns what was reported (nothing when every path was ignored).
        """
        spec = kind_of(kind)
        kept = [c for c in changes if not self.ignored(owner, c.path or "<root>")]
        if not kept:
            return []
        if severity is None:
            severity = "error" if kind == "alias" and self.settings.strict else spec.severity
        shown = kept[:MAX_PATHS]
        out = [
            Finding(
                kind=kind, owner=owner, path=c.path or "<root>", before=_text(c.before), after=_text(c.after),
                handover=site, check=check, test=self.test, label=label, severity=severity,
                hint=hint or spec.hint, stack=tuple(stack),
                more=len(kept) - len(shown) if i == len(shown) - 1 else 0,
                thread=threading.current_thread().name if thread is None else thread,
                detail=_text(c.text), origin=origin,
                shares=shares or _shared(c.path, aliases), process=self.process,
            )
            for i, c in enumerate(shown)
        ]
        with self.lock:
            if kind == "unverifiable":
                self.stats.unverifiable += 1
            elif severity != "info":
                self.stats.flagged += 1
            self.findings.extend(out)
            if self.sink is not None:  # a child process: each finding leaves at once
                self.sink(out)
        return out

    def note_handover(self, owner: str) -> None:
        """Count a handover an adapter saw but records itself (a class pickled by cloudpickle)."""
        with self.lock:
            self.stats.handovers += 1
            self.stats.owners[owner] += 1

    def note_checked(self) -> None:
        """Count a check an adapter made (the live class around a loads)."""
        with self.lock:
            self.stats.checked += 1


def _reduced(buffer: Any) -> Any:
    """A tensor's or array's reduction by its fingerprint handler (its digest among the rest)."""
    handler = handlers.handler_for(type(buffer))
    return handler(buffer) if handler is not None else None


def _live_unchanged(rec: Record) -> bool:
    """Whether the tensors/arrays of a snapshot fresh but for them read as they did when handed over."""
    try:
        return all(_reduced(part) == then for part, then in rec.live or ())
    except Exception:  # a reduction that raises now: the full check decides
        return False


def _shared(path: str, aliases: Sequence[tuple[str, str]]) -> str:
    """The live path of the innermost alias at or above *path*."""
    best = ""
    best_len = -1
    for snap_path, live_path in aliases:
        if path.startswith(snap_path) and len(snap_path) > best_len:
            best, best_len = live_path, len(snap_path)
    return best


_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = MAX_TEXT


def _text(value: Any) -> str:
    """*value* as bounded text: a long string cut, a repr that raises shown as its type."""
    if not isinstance(value, str):
        try:
            value = _repr.repr(value)
        except Exception:
            return f"<{type(value).__name__}>"
    return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 3] + "..."


# The active ledger. A stack: pytester runs pytest inside pytest, each session
# pushes its own and must pop exactly its own.
_stack: list[Ledger] = []
current: Ledger | None = None


def active() -> Ledger | None:
    """The ledger recording in this process now, if any: what adapters report to."""
    led = current
    return led if led is not None and led.recording and led.pid == os.getpid() else None


def push(ledger: Ledger) -> None:
    global current
    _stack.append(ledger)
    current = ledger


def swap(old: Ledger, new: Ledger) -> None:
    """Put *new* where *old* is on the stack (a forked child's own ledger)."""
    global current
    for i, led in enumerate(_stack):
        if led is old:
            _stack[i] = new
    if current is old:
        current = new


def pop(ledger: Ledger) -> None:
    global current
    if not _stack or _stack[-1] is not ledger:
        raise RuntimeError("aliascheck: ledger stack out of order (a nested session did not clean up)")
    _stack.pop()
    current = _stack[-1] if _stack else None
