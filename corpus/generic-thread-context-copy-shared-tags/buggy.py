"""A worker runs each action in a thread pool with a copy of its context, as hatchet's Python SDK did
(hatchet#1711: "all context vars are copied into that thread"). The log tags live in one dict held by a
ContextVar; each action stamps its step into "its" tags in place, so the copies share one dict and an
action's log lines carry another action's step."""

import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

LOG_TAGS = contextvars.ContextVar("log_tags")


def action(step, stamped, other_stamped):
    tags = LOG_TAGS.get()
    tags["step"] = step  # the action's own step, written into the dict every copy shares
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
    assert lines[0] == "[step-b] done", "the bug did not reproduce"
