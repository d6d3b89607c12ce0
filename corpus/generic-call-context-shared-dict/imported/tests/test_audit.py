import asyncio

from reqlog.audit import request
from reqlog.context import start


def test_audit_logs_the_requests_user():
    got = asyncio.run(request(start))
    # The bug as it shows: the sibling task's impersonation leaked into the audit's context.
    assert got == "service-account", "the bug did not reproduce"
