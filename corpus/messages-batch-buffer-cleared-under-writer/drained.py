"""Correct code of the same shape: a writer thread appends its acknowledgements to a list the main
thread gave it, and the main thread drains that list (copies and clears it) under a lock while the
writer still runs. The list is the thread's results, filled by the thread: clean."""
import threading


def writer(started, window, acks, lock):
    for i in range(2):
        with lock:
            acks.append(i)
    started.set()
    window.wait(5)


started, window, acks, lock = threading.Event(), threading.Event(), [], threading.Lock()
t = threading.Thread(target=writer, args=(started, window, acks, lock))
t.start()
started.wait(5)
with lock:
    seen = list(acks)
    acks.clear()
window.set()
t.join()
print("acks:", seen)
assert seen == [0, 1], seen
