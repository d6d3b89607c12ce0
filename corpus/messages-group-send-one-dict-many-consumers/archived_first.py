"""One message dict on each member's asyncio.Queue; the first consumer archives what it took, then the
second drops the routing key from the same dict after dispatching: the archive no longer holds what was
sent (channels_rabbitmq#17, the other order)."""

import asyncio


class InMemoryLayer:
    def __init__(self):
        self.channels = {}
        self.groups = {}

    def new_channel(self, name):
        self.channels[name] = asyncio.Queue()
        return name

    def group_add(self, group, channel):
        self.groups.setdefault(group, []).append(channel)

    async def group_send(self, group, message):
        for channel in self.groups[group]:
            await self.channels[channel].put(message)  # every member gets the same object

    async def receive(self, channel):
        return await self.channels[channel].get()


async def archive(layer, channel, archived):
    message = await layer.receive(channel)
    archived.append(message)  # kept as it was sent


async def consume(layer, channel, dispatched):
    message = await layer.receive(channel)
    handler = message.pop("type", None)  # dispatch on the type, keep the payload
    dispatched.append((channel, handler, message))


async def main():
    layer = InMemoryLayer()
    for name in ("ws-1", "ws-2"):
        layer.group_add("room", layer.new_channel(name))
    await layer.group_send("room", {"type": "chat.message", "text": "hello"})
    archived, dispatched = [], []
    await asyncio.create_task(archive(layer, "ws-1", archived))  # each consumer a task of its own
    await asyncio.create_task(consume(layer, "ws-2", dispatched))
    return archived


got = asyncio.run(main())
print(got)
assert got == [{"text": "hello"}], "the bug did not reproduce"
