"""Handlers in another module read and write the request's dict through the imported ContextVar."""
import asyncio

from .context import request_values


async def impersonate(switched):
    request_values.get()["user"] = "service-account"  # in place: every sibling task's copy shares it
    switched.set()


async def audit(switched):
    await switched.wait()
    return request_values.get()["user"]  # read inline, never bound to a name


async def request(start):
    start("alice")
    switched = asyncio.Event()
    helper = asyncio.create_task(impersonate(switched))
    logger = asyncio.create_task(audit(switched))
    await helper
    return await logger
