"""An in-memory group send puts one message dict on each member's asyncio.Queue; the first consumer drops
the routing key after dispatching, and the second consumer, holding the same dict, cannot dispatch
(channels_rabbitmq#17). Fixed: each member gets its own deep copy, as channels' InMemoryChannelLayer does."""

import asyncio
import copy


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
            await self.channels[channel].put(copy.deepcopy(message))  # each member its own copy

    async def receive(self, channel):
        return await self.channels[channel].get()


async def consume(layer, channel, dispatched):
    message = await layer.receive(channel)
    handler = message.pop("type", None)  # dispatch on the type, keep the payload
    dispatched.append((channel, handler, message))


async def main():
    layer = InMemoryLayer()
    for name in ("ws-1", "ws-2"):
        layer.group_add("room", layer.new_channel(name))
    await layer.group_send("room", {"type": "chat.message", "text": "hello"})
    dispatched = []
    await consume(layer, "ws-1", dispatched)
    await consume(layer, "ws-2", dispatched)
    return dispatched


got = asyncio.run(main())
print(got)
assert [handler for _, handler, _ in got] == ["chat.message", "chat.message"]
