"""Submit a copy: the worker evaluates the progress as it was at apply_async(), whenever it is pickled."""

import copy
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
        report = pool.apply_async(evaluate, (copy.deepcopy(progress),))
        progress["epoch"] = 2  # ... while training goes on with the same dict
        progress["seen"].extend([3, 4, 5])
        event.set()
        busy.get()
        assert big.get() == len(FILLER)
        got = report.get()
        pool.close()
        pool.join()
    print(f"the worker evaluated {got}")
    assert got == {"epoch": 1, "seen": [0, 1, 2]}


if __name__ == "__main__":
    main()
