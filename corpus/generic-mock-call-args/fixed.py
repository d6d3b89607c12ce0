"""The documentation's CopyingMock deep-copies the arguments of each call as it records it."""

import copy
from unittest import mock


class CopyingMock(mock.MagicMock):
    def __call__(self, /, *args, **kwargs):
        return super().__call__(*copy.deepcopy(args), **copy.deepcopy(kwargs))


def publish(send, channels):
    message = {"channel": None, "body": "hello"}
    for channel in channels:
        message["channel"] = channel
        send(message)


send = CopyingMock(name="send")
publish(send, ["first", "second"])
recorded = [call.args[0]["channel"] for call in send.call_args_list]
print(f"channels as call_args_list shows them: {recorded}")
assert recorded == ["first", "second"]
