"""CPython issue 157057: a function sends one message dict, updated in place between two calls (the
message is heavy, so it is not copied). Production works: the callee reads it at once. The test
patches the callee and reads ``call_args_list``, which holds the one dict as it is now: both recorded
calls show the second channel, and the test of the first call's channel fails."""
from unittest import mock


def publish(message):
    pass


def main():
    message = {"channel": "first_channel"}
    publish(message)
    message["channel"] = "second_channel"  # reused: updated, not copied
    publish(message)


with mock.patch(__name__ + ".publish") as publish_mock:
    main()
    channels = [c.args[0]["channel"] for c in publish_mock.call_args_list]

print("recorded channels:", channels)
assert channels == ["second_channel", "second_channel"], "the bug did not reproduce"
