"""Who holds a value (aliascheck.keepers): one heap scan answers for many objects, and a round of
judging shares its scans without its own memory ever showing as a holder or keeping garbage alive."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

import aliascheck.keepers as keepers
from aliascheck import gate


class _Box:
    pass


def _implementations() -> list[Any]:
    found = [keepers._referrers_here]
    if gate.COMPILED:
        found.append(gate._compiled.referrers)
    return found


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of targets of each multi-target scan, and a -1 for each single one."""
    scans: list[int] = []
    many = keepers._referrers
    inside: list[bool] = []

    def scan(targets: list[Any], skip: set[int]) -> list[list[Any]]:
        scans.append(len(targets))
        inside.append(True)  # the reference's own gc.get_referrers calls are this one scan
        try:
            return many(targets, skip)
        finally:
            inside.pop()

    single = gc.get_referrers

    def one(*objs: Any) -> list[Any]:
        if not inside:
            scans.append(-1)
        return single(*objs)

    monkeypatch.setattr(keepers, "_referrers", scan)
    monkeypatch.setattr(keepers.gc, "get_referrers", one)
    yield scans


@pytest.mark.parametrize("referrers", _implementations(), ids=lambda f: f.__module__)
def test_one_scan_names_each_targets_holders_as_the_interpreter_does(referrers: Any) -> None:
    values = [{"n": n} for n in range(5)]
    lists = [[v] for v in values]
    box = _Box()
    box.first, box.last = values[0], values[-1]
    skipped = {"again": values[2]}
    targets = list(values)
    found = referrers(targets, {id(skipped)})
    assert len(found) == len(values)
    for i in range(len(values)):
        holders = found[i]
        # (This frame aside: its own loop variable holds the value only since the scan.)
        expected = {id(r) for r in gc.get_referrers(values[i]) if type(r) is not FrameType}
        assert {id(h) for h in holders} == expected - {id(skipped), id(targets)}
        assert len(holders) == len({id(h) for h in holders})  # each holder once
    assert any(h is lists[1] for h in found[1])
    assert any(h is vars(box) or h is box for h in found[0])
    assert all(h is not skipped for h in found[2])


def test_one_scan_rejects_what_it_cannot_read() -> None:
    if not gate.COMPILED:
        pytest.skip("the compiled gate is not built")
    with pytest.raises(TypeError):
        gate._compiled.referrers((1, 2), set())
    with pytest.raises(TypeError):
        gate._compiled.referrers([], [])


def test_a_rounds_questions_share_one_scan(counted: list[int]) -> None:
    values = [{"n": n} for n in range(6)]
    holders = [{"v": v} for v in values]
    with keepers.collecting():
        keepers.expect(values)
        answers = [keepers._scans.of(v) for v in values]
        assert counted == [6]
        # The dicts that referred to them were scanned for at the next question, all together.
        for holder in holders:
            keepers._scans.of(holder)
        assert len(counted) == 2
    for value, holder, answer in zip(values, holders, answers, strict=True):
        assert any(h is holder for h in answer)
        # The round's own memory (its lists, its entries) never shows as a holder.
        assert {id(h) for h in answer} <= {id(r) for r in gc.get_referrers(value)}
    assert keepers._scans.found == {}  # nothing is held past the round


def test_outside_a_round_each_question_is_its_own_scan(counted: list[int]) -> None:
    value = {"n": 1}
    keepers.expect([value])  # no round: nothing remembered
    keepers._scans.of(value)
    keepers._scans.of(value)
    assert counted == [-1, -1]


def test_garbage_that_once_held_a_value_is_collected_in_a_round() -> None:
    store = [{"n": 1}]
    box = _Box()
    box.value, box.me = store[0], box  # a cycle: garbage once dropped, not yet collected
    gone = weakref.ref(box)
    del box
    gc.disable()
    try:
        with keepers.collecting():
            keepers.expect(store)
            # Held by the garbage only (the list is passed over): the scan's memory of the garbage
            # is let go before the collector runs, so the garbage dies and holds nothing.
            held = keepers.held_by(store[0], {id(store)}, set(), 4)  # (no assert's temporaries)
    finally:
        gc.enable()
    assert not held
    assert gone() is None


def test_a_real_holder_is_found_through_a_rounds_scans() -> None:
    store = [{"n": 1}]
    keeper = _Box()
    keeper.history = [store[0]]
    with keepers.collecting():
        keepers.expect(store)
        kept = keepers.held_by(store[0], {id(store)}, set(), 4)  # (no assert's temporaries)
    del keeper
    with keepers.collecting():
        keepers.expect(store)
        dropped = keepers.held_by(store[0], {id(store)}, set(), 4)
    assert kept
    assert not dropped
