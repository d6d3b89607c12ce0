"""The test records copies (unittest.mock's "Coping with mutable arguments": a side_effect that copies
the arguments as the call is made), and reads those: each call's channel as it was passed."""
import copy
from unittest import mock


def publish(message):
    pass


def main():
    message = {"channel": "first_channel"}
    publish(message)
    message["channel"] = "second_channel"
    publish(message)


seen = []
with mock.patch(__name__ + ".publish", side_effect=lambda m: seen.append(copy.deepcopy(m))) as publish_mock:
    main()

print("recorded channels:", [m["channel"] for m in seen], "calls:", publish_mock.call_count)
assert [m["channel"] for m in seen] == ["first_channel", "second_channel"]
