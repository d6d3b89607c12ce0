"""jupyter_server's CallContext after #1561: set() copies the dict and sets the copy, so a task's
set() stays in that task's context and its siblings keep the request's values (jupyter_server#1462)."""

import asyncio
from contextvars import ContextVar


class CallContext:
    _NAME_VALUE_MAP = "_name_value_map"
    _name_value_map: ContextVar[dict] = ContextVar(_NAME_VALUE_MAP)

    @classmethod
    def get(cls, name):
        name_value_map = CallContext._get_map()
        return name_value_map.get(name)

    @classmethod
    def set(cls, name, value):
        name_value_map = dict(CallContext._get_map())  # copy on write: this context's own dict
        name_value_map[name] = value
        cls._name_value_map.set(name_value_map)

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
assert got == "alice"
