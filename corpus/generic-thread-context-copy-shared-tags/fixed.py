"""A worker runs each action in a thread pool with a copy of its context (hatchet#1711). Fixed: each
action sets a new tags dict of its own in its copy, so no other action's step reaches its log lines."""

import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

LOG_TAGS = contextvars.ContextVar("log_tags")


def action(step, stamped, other_stamped):
    LOG_TAGS.set({**LOG_TAGS.get(), "step": step})  # a new dict in this action's own copy
    stamped.set()
    if not other_stamped.wait(30):
        raise TimeoutError("the other action never started")
    tags = LOG_TAGS.get()  # what this action's log line is tagged with
    return f"[{tags['step']}] done"


def run_actions():
    LOG_TAGS.set({"worker": "w1"})
    first, second = threading.Event(), threading.Event()
    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(contextvars.copy_context().run, action, "step-a", first, second)
        if not first.wait(30):
            raise TimeoutError("the first action never started")
        b = pool.submit(contextvars.copy_context().run, action, "step-b", second, first)
        return a.result(30), b.result(30)


if __name__ == "__main__":
    lines = run_actions()
    print(f"log lines: {lines}")
    assert lines == ("[step-a] done", "[step-b] done"), "the fix did not hold"
