"""The review's fix for BoundaryML/baml#3389: no mutable default. A context with no value yet sets a
dict of its own, so concurrent calls (each a task with its own context copy) keep their spans apart."""

import asyncio
import contextvars
import threading


class HostSpanManager:
    def __init__(self):
        self.spans = []


class CtxManager:
    def __init__(self):
        self.ctx: contextvars.ContextVar[dict[int, HostSpanManager] | None] = contextvars.ContextVar(
            "baml_ctx", default=None)

    def mgr(self):
        ctx = self.ctx.get()
        if ctx is None:
            ctx = {}
            self.ctx.set(ctx)  # this context's own dict
        thread_id = threading.get_ident()
        if thread_id not in ctx:
            ctx[thread_id] = HostSpanManager()
        return ctx[thread_id]


manager = CtxManager()


async def traced_call(name):
    spans = manager.mgr().spans
    spans.append(name)
    await asyncio.sleep(0)
    return list(spans)


async def main():
    return await asyncio.gather(traced_call("extract"), traced_call("classify"))


seen = asyncio.run(main())
print(f"spans each call saw: {seen}")
assert seen == [["extract"], ["classify"]]
