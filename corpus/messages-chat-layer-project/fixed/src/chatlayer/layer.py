"""An in-memory channel layer: every channel is an asyncio.Queue, a group is a list of channels."""

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


async def dispatch(layer, channel, handlers):
    """A consumer's loop body: take a message, route it by its type, hand the handler the rest."""
    message = await layer.receive(channel)
    handler = handlers.get(message.pop("type", None))
    return handler(message) if handler else None
