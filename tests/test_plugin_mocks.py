"""The mocks adapter: a mock's recorded call read by the test after the caller changed an argument."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

RUN = ("--aliascheck", "-p", "no:cacheprovider", "-p", "no:randomly")


def _literal(text: str) -> str:
    return text.replace("[", "[[]")

CALLS = """
    from unittest import mock

    import pytest


    class Batcher:
        def __init__(self, send, size=2, rebind=False, copy=False):
            self.send, self.size, self.rebind, self.copy = send, size, rebind, copy
            self.pending = []

        def add(self, msg):
            self.pending.append(msg)
            if len(self.pending) >= self.size:
                self.send(list(self.pending) if self.copy else self.pending)
                if self.rebind:
                    self.pending = []
                else:
                    self.pending.clear()


    def feed(**how):
        send = mock.Mock()
        b = Batcher(send, **how)
        for m in "abcd":
            b.add(m)
        return send

    def test_buggy_batches_read_after_the_clear():
        send = feed()
        assert [c.args[0] for c in send.call_args_list] == [[], []]

    def test_buggy_keyword_payload_changed_then_asserted():
        post = mock.MagicMock()
        payload = {"user": "a"}
        post(json=payload)
        payload["user"] = "b"
        post.assert_called_once_with(json={"user": "b"})

    def test_batches_rebound():
        send = feed(rebind=True)
        assert [c.args[0] for c in send.call_args_list] == [["a", "b"], ["c", "d"]]

    def test_batches_copied():
        send = feed(copy=True)
        send.assert_has_calls([mock.call(["a", "b"]), mock.call(["c", "d"])])

    def test_only_the_count_read():
        assert feed().call_count == 2

    def test_read_before_the_change():
        send = mock.Mock()
        rows = [1]
        send(rows)
        send.assert_called_once_with([1])
        rows.append(2)

    def test_a_side_effect_fills_the_buffer():
        items = []
        fill = mock.Mock(side_effect=lambda out: out.append(1))
        fill(items)
        fill.assert_called_once_with([1])

    def test_an_object_argument_compared_by_identity():
        class Request:
            def __init__(self):
                self.headers = {}
        handler = mock.Mock()
        req = Request()
        handler(req)
        req.headers["x"] = "1"
        handler.assert_called_once_with(req)

    def process(messages, changes):
        return len(messages)

    def process_all(changes):
        process(["message1"], changes)
        changes.append("new_change")

    def test_buggy_autospec_function_asserted_after_the_append():
        with mock.patch(__name__ + ".process", autospec=True) as patched:
            process_all([])
            patched.assert_called_with(["message1"], ["new_change"])

    def test_one_message_updated_for_each_call_only_the_last_asserted():
        send = mock.Mock()
        msg = {}
        for user in "ab":
            msg["to"] = user
            send(msg)
        send.assert_called_with({"to": "b"})

    def submit(session, item):
        payload = {"id": item, "attempt": 0}
        for attempt in (1, 2):
            payload["attempt"] = attempt
            session.post("/jobs", json=payload)

    def test_buggy_retries_of_one_payload_asserted_as_they_are_now():
        session = mock.Mock()
        submit(session, 5)
        session.post.assert_has_calls([mock.call("/jobs", json={"id": 5, "attempt": 2})] * 2)

    def test_any_matcher_for_the_changed_argument():
        sink = mock.Mock()
        pending = [1]
        sink(pending, final=True)
        pending.clear()
        sink.assert_called_once_with(mock.ANY, final=True)
        assert len(sink.call_args_list) == 1

    def test_another_call_compared():
        put = mock.Mock()
        first, second = {"v": [1]}, {"v": [2]}
        put(1, first)
        put(2, second)
        first["v"].append(99)
        assert put.call_args_list[1] == mock.call(2, {"v": [2]})

    def test_any_call_true_for_the_call_as_made():
        cb = mock.Mock()
        window = []
        for x in (1, 2):
            window.append(x)
            cb(window)
        window.append(3)
        cb.assert_any_call([1, 2, 3])  # both calls show [1, 2, 3] now; neither was made with it

    def test_sealed_then_counted():
        sink = mock.Mock()
        rows = [1]
        sink.write(rows)
        rows.clear()
        mock.seal(sink)
        assert sink.write.call_count == 1

    def test_reset_between_phases():
        push = mock.Mock()
        for phase in range(20):
            push({"id": phase})
            push({"id": phase, "x": 1})
            push.reset_mock()
            push({"id": -phase})
            push.assert_called_once_with({"id": -phase})

    def test_an_async_side_effect_fills_the_argument():
        import asyncio
        fetch = mock.AsyncMock(side_effect=lambda query, out: out.extend([1]))
        rows = []
        asyncio.run(fetch("q", rows))
        fetch.assert_called_once_with("q", [1])

    def test_reset_then_read():
        send = mock.Mock()
        rows = [1]
        send(rows)
        rows.clear()
        send.reset_mock()
        send([2])
        send.assert_called_once_with([2])
"""


def test_a_mocks_recorded_call_read_after_its_argument_changed_is_judged(pytester: pytest.Pytester) -> None:
    """unittest.mock keeps each call's arguments and compares them when the test reads them: a list or
    dict changed by the caller after the call is read as it is now (the test asserts on the wrong
    value). Judged where the test looks: a comparison (``==``, ``assert_*``) only when the call as made
    would have answered the other way; ``args``/``kwargs`` read when a judged argument changed. Clean: a
    copy passed, a new list bound, only the count or the length read, the read made before the change,
    a side effect's own writes (an async mock's too), an object compared by identity, ``mock.ANY`` for
    the changed argument, another call compared, ``seal``, ``reset_mock`` between phases (new calls at
    reused ids), and the last call asserted when only earlier calls' arguments changed."""
    pytester.makepyfile(test_calls=CALLS)
    result = pytester.runpytest(*RUN, "-rA")
    result.assert_outcomes(passed=13, failed=5)
    for name in ("test_buggy_batches_read_after_the_clear", "test_buggy_keyword_payload_changed_then_asserted",
                 "test_buggy_autospec_function_asserted_after_the_append",
                 "test_buggy_retries_of_one_payload_asserted_as_they_are_now",
                 "test_any_call_true_for_the_call_as_made"):
        result.stdout.fnmatch_lines([f"FAILED test_calls.py::{name}*"])
    result.stdout.fnmatch_lines(["*" + _literal(
        "add (test_calls.py:14) changed an argument after calling the mock 'Mock'; the test reads the recorded "
        "call as it is now: args[0]: list shrank from 2 to 0 items (removed 'a', 'b')") + "*"])
    result.stdout.fnmatch_lines(["*" + _literal("kwargs['json']['user']: 'a' -> 'b'") + "*"])


def test_a_mock_called_by_library_code_is_not_recorded(pytester: pytest.Pytester) -> None:
    """A library calling the test's mock with its own list (``sorted(..., key=mock)`` gives each item)
    is not the project's call: nothing is recorded, so no read of it is judged."""
    pytester.makepyfile(test_lib="""
        import functools
        from unittest import mock

        def test_library_caller():
            acc = mock.Mock(side_effect=lambda total, x: total + x)
            assert functools.reduce(acc, [1, 2, 3]) == 6
            assert acc.call_count == 2
            assert acc.call_args_list[0].args == (1, 2)
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=1)


PARENTS_AND_AWAITS = """
    import asyncio
    from unittest import mock
    from unittest.mock import call


    def test_buggy_parent_mock_calls():
        manager = mock.Mock()
        msg = {"ch": "a"}
        manager.pub(msg)
        msg["ch"] = "b"
        assert manager.mock_calls == [call.pub({"ch": "b"})]

    def test_buggy_grandparent_method_calls():
        manager = mock.Mock()
        rows = ["a"]
        manager.sub.pub(rows)
        rows.append("b")
        assert manager.method_calls == [call.sub.pub(["a", "b"])]

    def test_buggy_attached_mock():
        manager, pub = mock.Mock(), mock.Mock()
        manager.attach_mock(pub, "pub")
        msg = {"n": 1}
        pub(msg)
        msg["n"] = 2
        manager.assert_has_calls([call.pub({"n": 2})])

    def test_buggy_awaited_with():
        fetch = mock.AsyncMock()
        query = {"n": 1}

        async def go():
            await fetch(query)
            query["n"] = 2
        asyncio.run(go())
        fetch.assert_awaited_with({"n": 2})

    def test_buggy_await_args_read():
        fetch = mock.AsyncMock()
        rows = [1]

        async def go():
            await fetch(rows)
            rows.append(2)
        asyncio.run(go())
        assert fetch.await_args.args[0] == [1, 2]

    def test_buggy_changed_after_an_async_side_effect():
        async def count(d):
            return len(d)
        fetch = mock.AsyncMock(side_effect=count)
        query = {"n": 1}

        async def go():
            await fetch(query)
            query["n"] = 5
        asyncio.run(go())
        fetch.assert_called_with({"n": 5})

    def test_parent_given_a_copy():
        manager = mock.Mock()
        msg = {"ch": "a"}
        manager.pub(dict(msg))
        msg["ch"] = "b"
        assert manager.mock_calls == [call.pub({"ch": "a"})]

    def test_parent_read_before_the_change():
        manager = mock.Mock()
        msg = {"ch": "a"}
        manager.pub(msg)
        assert manager.mock_calls == [call.pub({"ch": "a"})]
        msg["ch"] = "b"

    def test_parent_reset_between_calls():
        manager = mock.Mock()
        msg = {"n": 1}
        manager.pub(msg)
        manager.reset_mock()
        msg["n"] = 2
        manager.pub(msg)
        assert manager.mock_calls == [call.pub({"n": 2})]

    def test_awaited_with_a_copy():
        fetch = mock.AsyncMock()
        query = {"n": 1}

        async def go():
            await fetch(dict(query))
            query["n"] = 2
        asyncio.run(go())
        fetch.assert_awaited_with({"n": 1})

    def test_async_side_effect_writes_are_the_calls_own():
        async def mark(d):
            d["seen"] = True
        fetch = mock.AsyncMock(side_effect=mark)
        query = {"n": 1}
        asyncio.run(fetch(query))
        fetch.assert_awaited_with({"n": 1, "seen": True})
        fetch.assert_called_with({"n": 1, "seen": True})

    def test_await_count_only():
        fetch = mock.AsyncMock()
        rows = [1]
        asyncio.run(fetch(rows))
        rows.append(2)
        assert fetch.await_count == 1
"""


def test_a_parents_and_an_awaits_record_of_the_call_are_judged_alike(pytester: pytest.Pytester) -> None:
    """A child mock's call is recorded in its parents' ``mock_calls`` and ``method_calls`` (``attach_mock``
    too), an async mock's in ``await_args_list`` as well: each entry holds the same arguments and is
    judged as the call's own entry is. Clean: a copy, a read before the change, ``reset_mock`` of the
    parent, an async side effect's own writes, a count."""
    pytester.makepyfile(test_parents=PARENTS_AND_AWAITS)
    result = pytester.runpytest(*RUN, "-rA")
    buggy = sorted(line.split("::")[1].split(" ")[0] for line in result.outlines
                   if line.startswith("FAILED test_parents.py::"))
    assert buggy == sorted(["test_buggy_parent_mock_calls", "test_buggy_grandparent_method_calls",
                            "test_buggy_attached_mock", "test_buggy_awaited_with", "test_buggy_await_args_read",
                            "test_buggy_changed_after_an_async_side_effect"])
    result.assert_outcomes(passed=6, failed=6)
    result.stdout.fnmatch_lines(["*" + _literal("args[0]: list grew from 1 to 2 items (appended 'b')") + "*"])
