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
    value). Judged at the read; clean: a copy passed, a new list bound, only the count read, the read
    made before the change, a side effect's own writes, an object compared by identity, a reset, and
    ``call_args`` (the last call) read when only earlier calls' arguments changed."""
    pytester.makepyfile(test_calls=CALLS)
    result = pytester.runpytest(*RUN, "-rA")
    result.assert_outcomes(passed=8, failed=3)
    result.stdout.fnmatch_lines(["FAILED test_calls.py::test_buggy_batches_read_after_the_clear*",
                                 "FAILED test_calls.py::test_buggy_keyword_payload_changed_then_asserted*",
                                 "FAILED test_calls.py::test_buggy_autospec_function_asserted_after_the_append*"])
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
