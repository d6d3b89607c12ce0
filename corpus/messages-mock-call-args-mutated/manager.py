"""The same report's message, asserted through a parent mock: ``attach_mock`` puts the patched
callee under a manager so that the test can check the order of calls across callees
(``manager.mock_calls``). The manager's entries hold the same dict as the callee's: both show the
second channel."""
from unittest import mock
from unittest.mock import call


def publish(message):
    pass


def audit(event):
    pass


def main():
    message = {"channel": "first_channel"}
    publish(message)
    audit("published")
    message["channel"] = "second_channel"  # reused: updated, not copied
    publish(message)


manager = mock.Mock()
with mock.patch(__name__ + ".publish") as publish_mock, mock.patch(__name__ + ".audit") as audit_mock:
    manager.attach_mock(publish_mock, "publish")
    manager.attach_mock(audit_mock, "audit")
    main()
    first = manager.mock_calls[0] == call.publish({"channel": "second_channel"})

print("the manager's first call reads as the second channel:", first)
assert first, "the bug did not reproduce"
