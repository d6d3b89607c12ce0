"""asyncio.Queue.put_nowait() queues the object itself: a change the sender makes before the consumer's get()
is what the consumer receives (asgiref#6, the in-memory channel layer before it deep-copied messages)."""

import asyncio


async def main():
    channel = asyncio.Queue()
    received = []

    async def consumer():
        received.append(await channel.get())

    task = asyncio.create_task(consumer())  # scheduled; it runs at the next await
    message = {"type": "chat.message", "foo": [1, 2, 3]}
    channel.put_nowait(message)  # "send": the queue holds the sender's dict
    message["foo"][0] = "new value"  # the sender reuses its dict for the next message
    await task
    return received[0]


got = asyncio.run(main())
print(f"sent {{'type': 'chat.message', 'foo': [1, 2, 3]}}; received {got}")
assert got["foo"] == ["new value", 2, 3], "the bug did not reproduce"
