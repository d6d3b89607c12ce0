"""A mock keeps the objects it was called with: reusing one message rewrites call_args_list (cpython#94348)."""

from unittest import mock


def publish(send, channels):
    message = {"channel": None, "body": "hello"}  # one message, reused: building it is costly
    for channel in channels:
        message["channel"] = channel
        send(message)


send = mock.Mock(name="send")
publish(send, ["first", "second"])
recorded = [call.args[0]["channel"] for call in send.call_args_list]
print(f"channels as call_args_list shows them: {recorded}")
assert recorded == ["second", "second"], "the bug did not reproduce"
