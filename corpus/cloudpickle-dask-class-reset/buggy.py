"""Two Dask tasks load the same pickled class; the second load undoes the first's update (cloudpickle#439)."""

import cloudpickle
from distributed import Client, LocalCluster


class Counter:
    counter = 0


def first(data):
    cls = cloudpickle.loads(data)
    cls.counter += 1
    return cls.counter


def second(data, after_first):
    cls = cloudpickle.loads(data)  # resets Counter.counter to its value at dumps
    cls.counter += 1
    return cls.counter


if __name__ == "__main__":
    data = cloudpickle.dumps(Counter)
    with LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            one = client.submit(first, data, pure=False)
            two = client.submit(second, data, one, pure=False)  # runs after first: it needs its result
            counts = client.gather([one, two])
    print(f"counter seen by the two tasks: {counts}")
    assert counts == [1, 1], "the bug did not reproduce"
