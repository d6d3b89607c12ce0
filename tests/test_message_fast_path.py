"""The per-message fast path of flat messages (aliascheck._gate's flat_send and flat_taken) records and
judges as message_log's Python path does: the same findings, the same counts, the same table entries.

The compiled path only ever records a send at a site whose context the Python path made on an earlier
send there (same thread, ledger, channel and owner); everything else it answers NotImplemented. So each
scenario is run twice, with the fast path and with none, and compared.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from collections.abc import Callable
from typing import Any

import aliascheck.plugins.message_log as message_log
import aliascheck.plugins.messages as messages
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aliascheck import gate
from aliascheck.config import Options
from aliascheck.session import Session

pytestmark = pytest.mark.skipif(not gate.COMPILED, reason="the compiled gate was not built")

ATOMS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3))


def _run(scenario: Callable[[], None], fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """*scenario* in a checked test: its findings, its counts, and how many sends the fast path took."""
    took = [0]
    compiled = messages._fast
    wrapper = frozenset({messages.__file__})  # the frame this counter adds: walked past as the put's

    def counted(item: Any, channel: Any, owner: str, past: frozenset[str], led: Any, pickled: bool) -> Any:
        entry = compiled(item, channel, owner, past | wrapper, led, pickled)
        took[0] += entry is not NotImplemented
        return entry

    counted.__code__ = counted.__code__.replace(co_filename=messages.__file__)
    with monkeypatch.context() as patched:
        if fast:
            patched.setattr(messages, "_fast", counted)
        else:
            patched.setattr(messages, "_fast", message_log._no_fast_send)
            patched.setattr(messages, "_flat_taken", message_log._flat_taken_here)
            patched.setattr(message_log, "_flat_fed", message_log._flat_fed_here)
            patched.setattr(message_log, "_flat_synced", message_log._flat_synced_here)
        session = Session(Options(enabled=True, steps=0))
        session.start()
        try:
            session.begin_test("scenario")
            scenario()
            found = session.end_test(0)
            stats = session.stats
        finally:
            session.stop()
    return sorted((f.kind, f.path, f.before, f.after, f.handover.rsplit(":", 1)[-1]) for f in found), \
        (stats.handovers, stats.checked, stats.flagged), took[0]


def _sends(q: Any, items: list[Any]) -> None:
    for item in items:
        q.put(item)  # one send site for every message


def test_flat_messages_are_judged_the_same_with_and_without_the_fast_path(monkeypatch):
    def scenario() -> None:
        q: queue.Queue[Any] = queue.Queue()
        other: queue.Queue[Any] = queue.Queue()
        changed, grown, reordered = {"i": 1, "j": 2}, {"i": 1}, {"a": 1, "b": 2}
        items: list[Any] = [{"k": n} for n in range(20)] + [[n, "x", None] for n in range(5)]
        items += [changed, grown, reordered, {"nested": [1]}, [[1]]]
        again = {"sent": "twice"}
        _sends(q, [*items, again, again])
        _sends(other, [{"k": 1}, {"k": 2}])  # the same line, another channel
        worker = threading.Thread(target=_sends, args=(q, [{"t": 1}, {"t": 2}]))
        worker.start()
        worker.join()
        changed["j"] = 3
        grown["new"] = 0
        del reordered["a"]
        reordered["a"] = 1
        while not q.empty():
            q.get()
        while not other.empty():
            other.get()

    fast_found, fast_counts, fast_took = _run(scenario, True, monkeypatch)
    slow_found, slow_counts, slow_took = _run(scenario, False, monkeypatch)
    assert fast_found == slow_found
    assert {(path, before, after) for _, path, before, after, _ in fast_found} >= {
        ("['j']", "2", "3"), ("['new']", "<missing>", "0")}, fast_found
    assert fast_counts == slow_counts
    assert fast_counts[0] == 36, fast_counts  # every mutable message recorded
    # The compiled path took the repeated flat sends; the Python one the first at each context (three:
    # two channels, two threads), what is not flat (two) and the message sent again.
    assert (fast_took, slow_took) == (36 - 3 - 2 - 1, 0)


@settings(max_examples=200, deadline=None)
@given(flat=st.one_of(st.dictionaries(st.text(max_size=2), ATOMS, max_size=4), st.lists(ATOMS, max_size=4)),
       change=st.sampled_from(["none", "value", "add", "drop", "order", "equal copy"]))
def test_a_taken_flat_message_is_told_apart_the_same_by_both(flat: Any, change: str) -> None:
    item = flat.copy()
    if change == "value" and item:
        key = next(iter(item)) if isinstance(item, dict) else 0
        item[key] = object.__new__(object) if isinstance(item, dict) else 10**30 + 1
    elif change == "add":
        item.update({"zz": 1}) if isinstance(item, dict) else item.append(1)
    elif change == "drop" and item:
        item.popitem() if isinstance(item, dict) else item.pop()
    elif change == "order" and len(item) > 1:
        if isinstance(item, dict):
            first = next(iter(item))
            item[first] = item.pop(first)
        else:
            item.reverse()
    elif change == "equal copy":  # equal values that are other objects: a change of identity
        item = type(item)(item)
    answers = []
    for taken in (message_log._flat_taken_here, gate._compiled.flat_taken):
        sends = message_log._Sends(None, None, "q", "q#1")
        message_log._flat[id(item)] = entry = (item, flat, sends.serial)
        try:
            answer = taken(item)
        finally:
            message_log._flat.pop(id(item), None)
            message_log._by_serial.pop(sends.serial, None)
        assert answer is None or answer is True or answer is entry
        answers.append((answer is True, next(sends.unchanged)))
        assert taken(item) is None  # popped
    assert answers[0] == answers[1], (flat, item)


def test_flat_messages_through_a_pickling_queue_are_judged_the_same_with_and_without_the_fast_path(monkeypatch):
    # multiprocessing.Queue pickles in its feeder thread: a change after put is the sender's whether
    # or not the feeder pickled it yet (found at the feed, the sender's next receive or teardown); a
    # change once the sender received something after the feed is not.
    def scenario() -> None:
        q: Any = multiprocessing.Queue()
        changed, grown, late = {"a": 1}, [1, 2], {"b": 1}
        items: list[Any] = [{"k": n} for n in range(20)] + [changed, grown, late, [[1]]]
        _sends(q, items)
        changed["a"] = 2
        grown.append(3)
        for _ in items:
            q.get(timeout=30)
        late["b"] = 2  # received, and the receive came after the feed: the receiver's copy is made
        unread = {"c": 1}
        _sends(q, [unread])
        unread["c"] = 2  # never taken: judged at teardown (or at the feed)
        q.close()
        q.join_thread()
        with pytest.raises(ValueError):  # a closed queue: nothing sent, nothing recorded
            _sends(q, [{"d": 1}])

    fast_found, fast_counts, fast_took = _run(scenario, True, monkeypatch)
    slow_found, slow_counts, slow_took = _run(scenario, False, monkeypatch)
    assert fast_found == slow_found
    assert {(path, before, after) for _, path, before, after, _ in fast_found} == {
        ("['a']", "1", "2"), ("<root>", "2 items", "3 items"), ("['c']", "1", "2")}, fast_found
    # (checks differ with the feeder's timing: a message changed before its feed is looked at once)
    assert (fast_counts[0], fast_counts[2]) == (slow_counts[0], slow_counts[2]) == (25, 3), fast_counts
    # all but the first send at the site and [[1]]; the refused send too (taken back)
    assert (fast_took, slow_took) == (25 - 1 - 1 + 1, 0)
