import asyncio

from chatlayer import InMemoryLayer
from chatlayer.layer import dispatch


def test_group_send_reaches_the_first_member():
    async def main():
        layer = InMemoryLayer()
        for name in ("ws-1", "ws-2"):
            layer.group_add("room", layer.new_channel(name))
        await layer.group_send("room", {"type": "chat.message", "text": "hello"})
        handlers = {"chat.message": lambda message: message["text"]}
        first = await dispatch(layer, "ws-1", handlers)
        await dispatch(layer, "ws-2", handlers)  # the second member drains its queue too
        return first

    assert asyncio.run(main()) == "hello"


def test_channels_are_independent():
    async def main():
        layer = InMemoryLayer()
        layer.new_channel("a")
        layer.new_channel("b")
        await layer.channels["a"].put({"type": "ping"})
        return layer.channels["a"].qsize(), layer.channels["b"].qsize()

    assert asyncio.run(main()) == (1, 0)
