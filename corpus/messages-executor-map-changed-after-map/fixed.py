"""Map over copies: the workers score the shards as they were at map(), whenever the calls are pickled."""

import copy
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
        scores = ex.map(score, copy.deepcopy(shards))
        for shard in shards:  # the caller reuses its shard dicts for the next round
            shard["threshold"] = 0
        event.set()
        busy.result()
        assert big.result() == len(FILLER)
        got = list(scores)
    print(f"scores {got}")
    assert got == [5, 11]


if __name__ == "__main__":
    main()
