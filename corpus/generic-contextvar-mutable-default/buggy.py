"""BAML's Python client context manager as proposed in BoundaryML/baml#3389: span managers live in a
ContextVar whose default is a dict, written in place when a context has none yet. Every context
shares the default, so two concurrent calls on one thread share one span manager."""

import asyncio
import contextvars
import threading


class HostSpanManager:
    def __init__(self):
        self.spans = []


class CtxManager:
    def __init__(self):
        self.ctx: contextvars.ContextVar[dict[int, HostSpanManager]] = contextvars.ContextVar(
            "baml_ctx", default={})  # noqa: B039 - the bug itself

    def mgr(self):
        ctx = self.ctx.get()  # the default: the same dict in every context
        thread_id = threading.get_ident()
        if thread_id not in ctx:
            ctx[thread_id] = HostSpanManager()
        return ctx[thread_id]


manager = CtxManager()


async def traced_call(name):
    spans = manager.mgr().spans
    spans.append(name)
    await asyncio.sleep(0)  # the other call runs meanwhile
    return list(spans)


async def main():
    return await asyncio.gather(traced_call("extract"), traced_call("classify"))


seen = asyncio.run(main())
print(f"spans each call saw: {seen}")
assert seen[0] == ["extract", "classify"], "the bug did not reproduce"
