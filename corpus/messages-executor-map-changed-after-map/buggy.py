"""ProcessPoolExecutor.map() returns before its arguments are pickled: a change made after map() returns is
what the workers receive.

map() submits every call at once and returns; the executor's manager thread moves calls to the
workers' call queue, whose feeder thread pickles them later ("MP Queues pickle on a background
thread", daliuge#239). Here the only worker is busy (it waits for `go`) and a 16 MiB call queued
first keeps the feeder writing until the worker reads it, after the change below: ordered, no sleep.
"""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

FILLER = bytes(16 * 1024 * 1024)
go = None


def init(event):
    global go
    go = event


def wait_for_go():
    go.wait()


def size(blob):
    return len(blob)


def score(shard):
    return sum(x for x in shard["values"] if x >= shard["threshold"])


def main():
    ctx = multiprocessing.get_context("fork")
    event = ctx.Event()
    with ProcessPoolExecutor(1, mp_context=ctx, initializer=init, initargs=(event,)) as ex:
        busy = ex.submit(wait_for_go)
        big = ex.submit(size, FILLER)  # the feeder is writing this until the worker is free
        shards = [{"values": [1, 2, 3], "threshold": 2}, {"values": [4, 5, 6], "threshold": 5}]
        scores = ex.map(score, shards)  # all submitted; not one pickled yet
        for shard in shards:  # the caller reuses its shard dicts for the next round
            shard["threshold"] = 0
        event.set()
        busy.result()
        assert big.result() == len(FILLER)
        got = list(scores)
    print(f"expected the scores at map() [5, 11]; got {got}")
    assert got == [6, 15], "the bug did not reproduce"


if __name__ == "__main__":
    main()
