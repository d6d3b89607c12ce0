"""The async callee given a copy at each await: ``await_args_list`` holds each channel as it was sent."""
import asyncio
from unittest import mock


async def publish(message):
    pass


async def main():
    message = {"channel": "first_channel"}
    await publish(dict(message))
    message["channel"] = "second_channel"
    await publish(dict(message))


with mock.patch(__name__ + ".publish", new_callable=mock.AsyncMock) as publish_mock:
    asyncio.run(main())
    channels = [c.args[0]["channel"] for c in publish_mock.await_args_list]

print("awaited channels:", channels)
assert channels == ["first_channel", "second_channel"]
