"""The same gotcha with asyncio tasks: create_task schedules the coroutine, which runs after the loop
that made it yields; one message dict set for each user and given to every task reaches them all
with the last user."""
import asyncio


async def send(msg, outbox):
    await asyncio.sleep(0)
    outbox.append(msg["to"])


async def broadcast(users):
    msg, outbox, tasks = {"to": None, "body": "hello"}, [], []
    for user in users:
        msg["to"] = user
        tasks.append(asyncio.create_task(send(msg, outbox)))
    await asyncio.gather(*tasks)
    return outbox


outbox = asyncio.run(broadcast(["ann", "bob", "cy"]))
print("delivered to:", outbox)
assert outbox == ["cy", "cy", "cy"], "the bug did not reproduce"
