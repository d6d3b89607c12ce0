"""The same message dict on each member's queue, as in buggy.py, but the consumers only read it: one object
kept by two receivers is not a change for either (channels_rabbitmq#17's layer, read-only consumers)."""

import asyncio


async def main():
    queues = {"ws-1": asyncio.Queue(), "ws-2": asyncio.Queue()}
    message = {"type": "chat.message", "text": "hello"}
    for queue in queues.values():
        await queue.put(message)
    seen = []
    for name, queue in queues.items():
        got = await queue.get()
        seen.append((name, got["type"], got.get("text")))
    return seen


got = asyncio.run(main())
print(got)
assert [handler for _, handler, _ in got] == ["chat.message", "chat.message"]
