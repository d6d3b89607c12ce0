"""The same report's message sent by a coroutine to an async callee (``await publish(message)``),
patched with an ``AsyncMock``: ``await_args_list`` holds the one dict as it is now, so the first
await reads as the second channel."""
import asyncio
from unittest import mock


async def publish(message):
    pass


async def main():
    message = {"channel": "first_channel"}
    await publish(message)
    message["channel"] = "second_channel"  # reused: updated, not copied
    await publish(message)


with mock.patch(__name__ + ".publish", new_callable=mock.AsyncMock) as publish_mock:
    asyncio.run(main())
    channels = [c.args[0]["channel"] for c in publish_mock.await_args_list]

print("awaited channels:", channels)
assert channels == ["second_channel", "second_channel"], "the bug did not reproduce"
