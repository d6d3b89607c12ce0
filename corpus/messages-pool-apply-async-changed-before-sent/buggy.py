"""multiprocessing.Pool.apply_async() returns before its arguments are pickled: a change made after the call
is what the worker receives.

apply_async() puts (func, args) on the pool's task queue; the pool's task-handler thread pickles the
task when it writes it to the workers' pipe, one task after another. Here the only worker is busy
(it waits for `go`), and a 16 MiB task queued before ours keeps the task handler writing until the
worker reads it, which it does only after `go` is set, after the change below: ordered, no sleep.
"""

import multiprocessing

FILLER = bytes(16 * 1024 * 1024)
go = None


def init(event):
    global go
    go = event


def wait_for_go():
    go.wait()


def size(blob):
    return len(blob)


def evaluate(progress):
    return {"epoch": progress["epoch"], "seen": list(progress["seen"])}


def main():
    ctx = multiprocessing.get_context("fork")
    event = ctx.Event()
    with ctx.Pool(1, initializer=init, initargs=(event,)) as pool:
        busy = pool.apply_async(wait_for_go)
        big = pool.apply_async(size, (FILLER,))  # the task handler is writing this until the worker is free
        progress = {"epoch": 1, "seen": [0, 1, 2]}
        report = pool.apply_async(evaluate, (progress,))  # evaluate epoch 1 in the background
        progress["epoch"] = 2  # ... while training goes on with the same dict
        progress["seen"].extend([3, 4, 5])
        event.set()
        busy.get()
        assert big.get() == len(FILLER)
        got = report.get()
        pool.close()
        pool.join()
    print(f"submitted {{'epoch': 1, 'seen': [0, 1, 2]}}; the worker evaluated {got}")
    assert got == {"epoch": 2, "seen": [0, 1, 2, 3, 4, 5]}, "the bug did not reproduce"


if __name__ == "__main__":
    main()
