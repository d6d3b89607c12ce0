"""The same two tasks inside aliascheck.fixes.cloudpickle.keep_existing_classes(): the counter reaches 2."""

import cloudpickle
from distributed import Client, LocalCluster

from aliascheck.fixes.cloudpickle import keep_existing_classes


class Counter:
    counter = 0


def first(data):
    cls = cloudpickle.loads(data)
    cls.counter += 1
    return cls.counter


def second(data, after_first):
    cls = cloudpickle.loads(data)  # the workers call plain cloudpickle.loads: the fix is process-wide
    cls.counter += 1
    return cls.counter


if __name__ == "__main__":
    data = cloudpickle.dumps(Counter)
    with keep_existing_classes():
        with LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0") as cluster:
            with Client(cluster) as client:
                one = client.submit(first, data, pure=False)
                two = client.submit(second, data, one, pure=False)
                counts = client.gather([one, two])
    print(f"counter seen by the two tasks: {counts}")
    assert counts == [1, 2]
