"""The manager's order check with the message copied at each call (``publish(dict(message))``): each
recorded call holds the channel it was given."""
from unittest import mock
from unittest.mock import call


def publish(message):
    pass


def audit(event):
    pass


def main():
    message = {"channel": "first_channel"}
    publish(dict(message))
    audit("published")
    message["channel"] = "second_channel"
    publish(dict(message))


manager = mock.Mock()
with mock.patch(__name__ + ".publish") as publish_mock, mock.patch(__name__ + ".audit") as audit_mock:
    manager.attach_mock(publish_mock, "publish")
    manager.attach_mock(audit_mock, "audit")
    main()
    manager.assert_has_calls([call.publish({"channel": "first_channel"}), call.audit("published"),
                              call.publish({"channel": "second_channel"})])
print("calls in order:", len(manager.mock_calls))
