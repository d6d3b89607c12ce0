"""The ledger's judgement: what is held, what changed, who is to blame."""

from __future__ import annotations

import threading

import pytest

from aliascheck import ledger as ledger_mod
from aliascheck.config import Options
from aliascheck.fingerprint import fingerprint
from aliascheck.instrument import instrument, patch
from aliascheck.ledger import Ledger, Settings
from aliascheck.probe import aliases, parts, refcount, references_from, trust, trusted
from aliascheck.records import Record
from aliascheck.session import Session


class Counter:
    """A stateful object in the Stateful protocol, aliasing or not."""

    def __init__(self, copy: bool) -> None:
        self.state = {"n": 0, "seen": []}
        self.copy = copy

    def step(self) -> None:
        self.state["n"] += 1
        self.state["seen"].append(self.state["n"])

    def state_dict(self) -> dict:
        if self.copy:
            return {"n": self.state["n"], "seen": list(self.state["seen"])}
        return self.state

    def load_state_dict(self, sd: dict) -> None:
        self.state = sd  # keeps the caller's dict: the other direction of the bug


class Outer:
    def __init__(self, inner: Counter) -> None:
        self.inner = inner

    def state_dict(self) -> dict:
        return {"inner": self.inner.state_dict(), "k": 1}


@pytest.fixture
def session():
    undo = [instrument(Counter), instrument(Outer), instrument(Sampler), instrument(Resumer)]
    s = Session(Options(enabled=True))
    s.start()
    s.begin_test("t")
    yield s
    s.stop()
    for u in undo:
        u()


def errors(found):
    return [(f.kind, f.path, f.before, f.after, f.check) for f in found if f.severity == "error"]


def test_a_kept_live_snapshot_that_changes_is_flagged(session):
    c = Counter(copy=False)
    kept = [c.state_dict()]
    c.step()
    found = session.end_test(0)
    assert errors(found) == [
        ("mutation", "['n']", "0", "1", "teardown"),
        ("mutation", "['seen']", "0 items", "1 item", "teardown"),
    ]
    assert found[1].detail == "list grew from 0 to 1 item (appended 1)"
    assert found[0].owner == f"{__name__}.Counter" and found[0].label == "Counter#1"
    assert kept


def test_a_dropped_snapshot_is_not_judged(session):
    c = Counter(copy=False)
    c.state_dict()  # handed over and dropped at once: the canonical fix's shape
    c.step()
    assert errors(session.end_test(0)) == []


def test_a_copy_is_clean(session):
    c = Counter(copy=True)
    kept = c.state_dict()
    c.step()
    assert errors(session.end_test(0)) == [] and kept["n"] == 0


def test_the_same_live_object_handed_over_again_while_kept_is_caught_at_once(session):
    c = Counter(copy=False)
    keeper = [c.state_dict()]
    c.step()
    c.state_dict()
    assert [f.check for f in session.ledger.findings] == ["handover", "handover"]
    assert keeper


def test_the_alias_probe_names_both_paths_and_is_a_warning_until_a_change(session):
    c = Counter(copy=False)
    kept = c.state_dict()
    found = session.end_test(0)
    assert [(f.kind, f.path, f.before, f.severity) for f in found] == [
        ("alias", "<root>", "Counter.state", "warning")
    ]
    assert kept is c.state


def test_strict_mode_makes_an_alias_an_error():
    led = Ledger(Settings(strict=True))
    led.begin("t")
    c = Counter(copy=False)
    kept = c.state_dict()
    led.handover(kept, c, "state_dict", local_refs=1)
    assert [f.severity for f in led.drain()] == ["error"]


def test_an_alias_in_a_snapshot_nobody_kept_is_no_risk():
    led = Ledger()
    led.begin("t")
    c = Counter(copy=False)
    led.handover(c.state_dict(), c, "state_dict", local_refs=1)
    assert led.drain() == []


def test_nested_state_dicts_are_one_handover_blamed_on_the_inner_owner(session):
    outer = Outer(Counter(copy=False))
    kept = outer.state_dict()
    outer.inner.step()
    found = errors(session.end_test(0))
    assert session.stats.handovers == 1
    assert [p for _, p, *_ in found] == ["['inner']['n']", "['inner']['seen']"]
    assert kept


def test_the_inner_owner_is_named_for_a_nested_change(session):
    outer = Outer(Counter(copy=False))
    kept = outer.state_dict()
    outer.inner.step()
    found = [f for f in session.end_test(0) if f.kind == "mutation"]
    assert {(f.owner, f.label) for f in found} == {(f"{__name__}.Counter", "Counter#1")}
    assert kept


def test_reentry_checks_what_comes_back_and_then_watches_it(session):
    c = Counter(copy=False)
    sd = c.state_dict()
    c.step()
    other = Counter(copy=True)
    other.load_state_dict(sd)
    assert [f.check for f in session.ledger.findings] == ["reentry", "reentry"]
    session.ledger.findings.clear()
    fresh = {"n": 5, "seen": []}
    other.load_state_dict(fresh)
    other.step()  # writes into the caller's dict it kept
    found = errors(session.end_test(0))
    assert ("mutation", "['n']", "5", "6", "teardown") in found


def test_ignore_patterns_match_paths_and_owner_paths():
    led = Ledger(Settings(ignore=("*['seen']*",)))
    led.begin("t", ignore=(f"{__name__}.Counter:['n']",))
    c = Counter(copy=False)
    keep = [c.state_dict()]
    led.handover(keep[0], c, "state_dict", local_refs=0)
    c.step()
    led.verify_all("teardown")
    assert [f for f in led.drain() if f.kind == "mutation"] == []


def test_unverifiable_parts_are_reported_once_as_info():
    led = Ledger()
    led.begin("t")
    for _ in range(2):
        led.handover({"lock": threading.Lock()}, "cache", "watch", local_refs=0)
    found = led.drain()
    assert [(f.kind, f.path, f.severity) for f in found] == [("unverifiable", "['lock']", "info")]
    assert led.stats.unverifiable == 1  # places reported, each once


def test_nothing_is_recorded_when_not_recording_or_in_another_process():
    led = Ledger()
    led.handover({"a": 1}, "x", "watch")
    assert led.records == {}
    led.begin("t")
    led.pid = -1
    led.handover({"a": 1}, "x", "watch")
    assert led.records == {}


def test_refcount_counts_only_the_callers_references():
    obj: dict = {}
    assert refcount(obj) == 1
    held = [obj]
    assert refcount(obj) == 2 and held


def test_references_from_counts_direct_and_one_container_deep():
    c = Counter(copy=False)
    c.extra = [c.state]
    assert references_from(c, c.state) == 2
    assert references_from(object(), c.state) == 0


def test_probe_walks_are_bounded_and_aliases_keep_the_outermost():
    c = Counter(copy=False)
    snap = {"a": c.state, "b": {"c": c.state["seen"]}}
    assert aliases(snap, c, "C") == [("['a']", "C.state"), ("['b']['c']", "C.state['seen']")]
    deep = [[[[[1]]]]]
    assert len(list(parts(deep, "", 2, False))) == 3


def test_trust_by_module_or_type():
    undo = trust(Counter)
    try:
        assert trusted(Counter) and not trusted(Outer)
    finally:
        undo()
    undo = trust(__name__)
    try:
        assert trusted(Outer)
    finally:
        undo()
    assert not trusted(Outer)


def test_patches_nest_and_the_last_undo_restores():
    class K:
        def state_dict(self):
            return {}

    original = K.__dict__["state_dict"]
    first = instrument(K)
    second = instrument(K)
    assert K.__dict__["state_dict"] is not original
    first()
    first()  # an undo runs once
    assert K.__dict__["state_dict"] is not original
    second()
    assert K.__dict__["state_dict"] is original
    undo = patch(K, "state_dict", lambda f: f)
    undo()


def test_the_ledger_stack_refuses_to_pop_what_is_not_its_top():
    a, b = Ledger(), Ledger()
    ledger_mod.push(a)
    ledger_mod.push(b)
    with pytest.raises(RuntimeError, match="out of order"):
        ledger_mod.pop(a)
    ledger_mod.pop(b)
    ledger_mod.pop(a)


def test_handovers_in_worker_threads_land_in_the_ledger(session):
    c = Counter(copy=False)
    keep = []
    t = threading.Thread(target=lambda: keep.append(c.state_dict()))
    t.start()
    t.join()
    c.step()
    found = session.end_test(0)
    assert {f.thread for f in found if f.kind == "mutation"} == {t.name}
    assert keep


@pytest.mark.parametrize("copy", [False, True])
def test_a_part_of_an_unkept_snapshot_kept_by_a_consumer_is_judged(session, copy):
    """A consumer that keeps the pieces (torchdata's incremental worker state keeps the leaves of each
    state_dict() it is given) keeps the live list the snapshot shares; a copying state_dict() is clean."""
    c = Counter(copy=copy)
    leaves = dict(c.state_dict())  # the consumer keeps the leaves and drops the snapshot
    c.step()
    c.state_dict()  # the next handover: the kept leaf 'seen' grew under the consumer
    found = errors(session.end_test(0))
    if copy:
        assert found == []
    else:
        assert [(path, check) for _, path, _, _, check in found] == [("['seen']", "handover")]
    assert leaves["seen"] == ([] if copy else [1])


def test_an_unkept_live_snapshot_with_no_part_kept_is_not_judged(session):
    c = Counter(copy=False)
    c.state_dict()  # dropped at once: the handed-over dict is the owner's own, nobody else's
    c.step()
    c.state_dict()
    assert errors(session.end_test(0)) == []


def test_a_dropped_snapshots_unheld_parts_are_forgotten_with_it(session):
    """Handed over at every item and dropped: the inner states it indexed go too, so the
    ledger does not keep every snapshot alive through its parts."""
    outer = Outer(Counter(copy=True))
    for _ in range(50):
        outer.state_dict()
    assert len(session.ledger.parts) <= 1  # the last snapshot's inner state at most
    assert errors(session.end_test(0)) == []


def test_a_part_someone_still_holds_stays_followed_after_its_snapshot_is_dropped(session):
    inner = Counter(copy=False)
    outer = Outer(inner)
    kept = outer.state_dict()["inner"]  # the live inner state, kept alone; the snapshot is dropped
    for _ in range(3):
        outer.state_dict()
    assert id(inner.state) in session.ledger.parts
    assert kept is inner.state


def test_fresh_takes_buffers_that_own_their_memory_and_nothing_shared():
    import numpy as np
    import torch

    from aliascheck.probe import fresh

    live = torch.zeros(3)
    assert fresh({"g": torch.Generator().get_state(), "n": 1})
    assert fresh({"a": np.zeros(3), "t": torch.ones(2).clone()})
    assert not fresh({"t": live})  # the caller's name refers to it too
    assert not fresh({"t": live[:2]})  # a view of live memory
    assert not fresh({"t": live.detach()})  # a new object over the same memory
    assert not fresh({"a": np.zeros(4)[1:]})
    assert not fresh({"a": np.array([[1]], dtype=object)})  # holds references, not bytes
    assert not fresh({"p": torch.nn.Parameter(torch.zeros(2))})  # a subclass: not known
    assert live.sum() == 0


class Sampler:
    """A node whose state holds a generator state: new each time, or the one it keeps."""

    def __init__(self, keep: bool) -> None:
        import torch

        self.g = torch.Generator().manual_seed(0)
        self.kept = self.g.get_state()
        self.keep = keep

    def state_dict(self) -> dict:
        return {"g_state": self.kept if self.keep else self.g.get_state(), "offset": 0}


def test_a_state_with_a_new_tensor_is_counted_not_recorded_and_a_live_one_is_judged(session):
    new, live = Sampler(keep=False), Sampler(keep=True)
    held = [new.state_dict()]
    assert session.ledger.records == {} and session.ledger.stats.handovers == 1
    held.append(live.state_dict())
    assert len(session.ledger.records) == 1
    live.kept.zero_()  # the node writes into the tensor its snapshot shares
    assert [(f.kind, f.path) for f in session.end_test(0) if f.severity == "error"] == [
        ("mutation", "['g_state']")]


def test_a_nested_state_made_of_fresh_inner_states_is_counted_not_recorded(session):
    outer = Outer(Counter(copy=True))
    held = outer.state_dict()
    assert session.ledger.records == {} and session.ledger.stats.handovers == 1
    assert errors(session.end_test(0)) == [] and held["k"] == 1


def test_a_snapshot_fresh_but_for_a_kept_tensor_is_checked_by_that_tensor_alone(session, monkeypatch):
    """Only the tensor the node also refers to can change by another hand: a check re-reads it
    alone, and still catches its change; the holder's edit of its own new dict is not a finding."""
    node = Sampler(keep=True)
    snapshot = node.state_dict()
    rec = session.ledger.records[id(snapshot)]
    assert [part for part, _ in rec.live] == [node.kept]
    assert [part for _, part in rec.indexed] == [node.kept]  # the new rest is not followed
    with pytest.raises(AttributeError):  # no fingerprint made at the handover: only if one changes
        Record.__dict__["fp"].__get__(rec, Record)
    before = fingerprint(snapshot).shadow()["g_state"]
    fingerprints = []
    real = ledger_mod.fingerprint
    monkeypatch.setattr(ledger_mod, "fingerprint", lambda *a, **k: fingerprints.append(1) or real(*a, **k))
    snapshot["offset"] = 7  # the holder's own container
    assert session.ledger.verify(snapshot, "delivery") is False and fingerprints == []
    node.kept.add_(1)  # the node writes into the tensor the snapshot shares
    assert session.ledger.verify(snapshot, "delivery") is True and fingerprints == [1]
    after = fingerprint(snapshot).shadow()["g_state"]
    found = [f for f in session.end_test(0) if f.severity == "error"]
    assert [(f.kind, f.path, f.check) for f in found] == [("mutation", "['g_state']", "delivery")]
    # The diff's "before" is the tensor as handed over; the holder's own edit is not in it.
    assert before != after and found[0].before != found[0].after and found[0].more == 0


class Resumer(Sampler):
    """Keeps the state it loads and counts into it: the snapshot's new dict becomes its live state."""

    def load_state_dict(self, sd: dict) -> None:
        self.state = sd

    def step(self) -> None:
        self.state["offset"] += 1


def test_a_snapshot_new_but_for_a_tensor_loaded_into_a_node_that_keeps_it_is_judged_whole(session):
    """Once another node adopted it, its new parts are that node's live state too: a write there
    is a change of a snapshot shared by two live owners, not the holder's own edit."""
    source = Resumer(keep=True)
    snapshot = source.state_dict()
    assert session.ledger.records[id(snapshot)].live is not None
    other = Resumer(keep=True)
    other.load_state_dict(snapshot)
    other.step()
    assert [(f.kind, f.path) for f in session.end_test(0) if f.severity == "error"] == [
        ("mutation", "['offset']")]


# -- a load's tensors read once when nothing can have written them --------------------------------

class _Weights:
    """Loads by copying the given tensors into its own (as torch's default load does); *write* says
    how the load also writes into the caller's tensor, if at all."""

    def __init__(self, write: str) -> None:
        import torch

        self.w = torch.zeros(1 << 15)  # 128 KiB: big enough to be worth proving unwritten
        self.write = write
        self.kept: object = None

    def state_dict(self) -> dict[str, object]:
        return {"w": self.w.clone()}

    def load_state_dict(self, sd: dict[str, object]) -> None:
        given = sd["w"]
        self.w.copy_(given)
        if self.write == "in place":
            given.add_(1)
        elif self.write == "numpy view kept":
            self.kept = given.numpy()
            self.kept[0] = 5
        elif self.write == "data alias kept":
            self.kept = given.data
            self.kept[0] = 7


@pytest.mark.parametrize("write", ["none", "in place", "numpy view kept", "data alias kept"])
def test_a_loads_tensor_is_read_again_unless_nothing_can_have_written_it(monkeypatch, write):
    # The load's own write into the caller's state is a finding (rule Loads): it is read again after
    # the load unless its version, storage users and references all prove it unwritten.
    torch = pytest.importorskip("torch")
    import aliascheck.handlers as handlers

    reads: list[int] = []
    digest = handlers.digest_bytes
    monkeypatch.setattr(handlers, "digest_bytes", lambda data: reads.append(len(bytes(data))) or digest(data))
    session = Session(Options(enabled=True, steps=0))
    session.start()
    undo = instrument(_Weights)
    try:
        node = _Weights(write)
        checkpoint = {"w": torch.ones(1 << 15)}
        session.begin_test("load")
        reads.clear()
        node.load_state_dict(checkpoint)
        after_load = len(reads)
        found = session.end_test(0)
    finally:
        undo()
        session.stop()
    written = [f for f in session.findings if f.kind == "mutation" and f.check == "load"]
    if write == "none":
        assert after_load == 1 and not written, (reads, found)  # read at the load's start only
    else:
        assert after_load == 2, reads
        assert written, session.findings
