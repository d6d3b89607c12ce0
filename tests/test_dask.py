"""The class reset on a real Dask cluster: two tasks, two worker threads, one pickled class.

One ``LocalCluster`` (in-process, threads) per test module, inside the pytester
run. Task ``first`` loads the class and increments its counter; task ``second``
waits for that (an Event, no sleeps), loads the same pickle, which resets the
counter, and increments it: both see 1. ``--aliascheck`` flags ``second``'s load;
with the fix the counter reaches 2.
"""

from __future__ import annotations

import pytest

pytest.importorskip("distributed", reason="the Dask test needs the extra: pip install 'aliascheck[dask]'")

TASKS = """\
import threading

import cloudpickle

first_done = threading.Event()


def first(data):
    cls = cloudpickle.loads(data)
    cls.counter += 1
    first_done.set()
    return cls.counter


def second(data):
    assert first_done.wait(60), "task first never ran"
    cls = cloudpickle.loads(data)
    cls.counter += 1
    return cls.counter
"""

COUNTER = """\
class Counter:
    counter = 0
"""

TEST = """\
import threading

import cloudpickle
import pytest
from distributed import Client, LocalCluster

import counter
import tasks
from aliascheck.fixes import cloudpickle as fix

cloudpickle.register_pickle_by_value(counter)


@pytest.fixture(scope="module")
def client():
    before = set(threading.enumerate())
    with LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            yield client
    # Dask's process-wide offload executor outlives every cluster by design.
    left = [t.name for t in set(threading.enumerate()) - before if not t.name.startswith("Dask-Offload")]
    assert left == [], left


def run_tasks(client):
    tasks.first_done.clear()
    counter.Counter.counter = 0
    data = cloudpickle.dumps(counter.Counter)
    futures = [client.submit(tasks.first, data, pure=False), client.submit(tasks.second, data, pure=False)]
    return client.gather(futures)


def test_tasks_share_the_class(client):
    assert run_tasks(client) == [1, 1]  # the second load undid the first increment


def test_tasks_share_the_class_with_the_fix(client):
    with fix.keep_existing_classes():  # the worker threads call plain cloudpickle.loads
        assert run_tasks(client) == [1, 2]
"""


def test_a_reset_between_two_dask_tasks_is_flagged_and_the_fix_removes_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(tasks=TASKS, counter=COUNTER, test_dask_reset=TEST)
    result = pytester.runpytest_subprocess("--aliascheck", "-W", "error", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*test_tasks_share_the_class*",
        "*aliascheck [[]class-reset[]]: cloudpickle.loads (tasks.py:17) reset counter.Counter.counter: 1 -> 0",
        "*owner:    counter.Counter (pickled at test_dask_reset.py:*)",
        "*change:   counter    1 -> 0",
        "*handover: tasks.py:17 (thread *Dask-Default-Threads-*)",
        "*stack:    tasks.py:17 in second",
        "*fix:      tasks.py:17: load with aliascheck.fixes.cloudpickle.loads(data, existing_classes='keep')",
        "FAILED test_dask_reset.py::test_tasks_share_the_class - *",
    ])
