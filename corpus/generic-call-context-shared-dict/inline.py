"""The buggy variant, the task's read written inline (``cls._name_value_map.get().get(name)``): the
same finding, whatever the binding form. jupyter_server's CallContext before #1561: a ContextVar holds
one dict of request values, and set() writes into it in place. asyncio copies a task's context
shallowly, so tasks spawned from one request share that dict: one task's set() reaches its siblings
(jupyter_server#1462, "context pollution")."""

import asyncio
from contextvars import ContextVar


class CallContext:
    _NAME_VALUE_MAP = "_name_value_map"
    _name_value_map: ContextVar[dict] = ContextVar(_NAME_VALUE_MAP)

    @classmethod
    def get(cls, name):
        CallContext._get_map()
        return cls._name_value_map.get().get(name)  # read in the expression, never bound to a name

    @classmethod
    def set(cls, name, value):
        name_value_map = CallContext._get_map()
        name_value_map[name] = value  # in place: every context copy that shares the dict sees it

    @classmethod
    def _get_map(cls):
        if cls._name_value_map.get(None) is None:
            cls._name_value_map.set({})
        name_value_map = cls._name_value_map.get()
        return name_value_map


async def impersonate(user, switched):
    CallContext.set("user", user)  # this task's own request user, it thinks
    switched.set()


async def audit(switched):
    await switched.wait()
    return CallContext.get("user")  # the sibling task's user, not the request's


async def request():
    CallContext.set("user", "alice")
    switched = asyncio.Event()
    helper = asyncio.create_task(impersonate("service-account", switched))
    logger = asyncio.create_task(audit(switched))
    await helper
    return await logger


got = asyncio.run(request())
print(f"audit logged user {got!r} for alice's request")
assert got == "service-account", "the bug did not reproduce"
