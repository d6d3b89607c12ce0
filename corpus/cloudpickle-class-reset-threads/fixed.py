"""The worker thread loads with aliascheck.fixes.cloudpickle.loads: the registration survives."""

import threading

import cloudpickle

from aliascheck.fixes.cloudpickle import loads


class Registry:
    """Class-level state shared by every thread, like a dispatcher's cache of compiled versions."""

    entries = 0


payload = cloudpickle.dumps(Registry)  # a task that carries the class, pickled before any registration
registered, loaded = threading.Event(), threading.Event()
seen = []


def user():
    Registry.entries += 1
    registered.set()
    assert loaded.wait(60)
    seen.append(Registry.entries)


def worker():
    assert registered.wait(60)  # the user thread has registered before this loads
    loads(payload)
    loaded.set()


threads = [threading.Thread(target=user, name="user"), threading.Thread(target=worker, name="worker")]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(f"entries seen by the user thread after the load: {seen}")
assert seen == [1]
