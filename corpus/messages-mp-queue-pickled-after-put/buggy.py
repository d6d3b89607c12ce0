"""multiprocessing.Queue.put() returns before the message is pickled: a change made after put()
is what the receiver gets.

The feeder thread sends messages in order, and pickles one only after the previous one is
written. A first message larger than any pipe buffer (16 MiB; Linux pipes hold 64 KiB by
default) keeps it writing until the reader drains the pipe, which happens only in get(),
after the change below: the ordering is fixed, no sleep involved.
"""

import multiprocessing

FILLER = bytes(16 * 1024 * 1024)


def main():
    q = multiprocessing.Queue()
    q.put(FILLER)  # the feeder thread is busy writing this until someone reads
    progress = {"epoch": 1, "done": [1, 2, 3]}
    q.put(progress)  # queued as the object itself, not yet pickled
    progress["epoch"] = 2  # the producer goes on with its own state
    progress["done"].clear()
    assert q.get() == FILLER
    received = q.get()  # pickled by the feeder only now
    q.close()
    q.join_thread()
    print(f"put: {{'epoch': 1, 'done': [1, 2, 3]}}; received: {received}")
    assert received == {"epoch": 2, "done": []}, "the bug did not reproduce"


main()
