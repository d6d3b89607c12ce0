"""Queue a copy, as channels' InMemoryChannelLayer.send does (put_nowait(deepcopy(message))): the consumer
receives the message as it was sent."""

import asyncio
import copy


async def main():
    channel = asyncio.Queue()
    received = []

    async def consumer():
        received.append(await channel.get())

    task = asyncio.create_task(consumer())
    message = {"type": "chat.message", "foo": [1, 2, 3]}
    channel.put_nowait(copy.deepcopy(message))
    message["foo"][0] = "new value"
    await task
    return received[0]


got = asyncio.run(main())
print(f"received {got}")
assert got == {"type": "chat.message", "foo": [1, 2, 3]}
