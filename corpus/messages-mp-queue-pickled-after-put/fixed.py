"""Put a copy: what the receiver gets is the message as it was at put(), whenever it is pickled."""

import copy
import multiprocessing

FILLER = bytes(16 * 1024 * 1024)


def main():
    q = multiprocessing.Queue()
    q.put(FILLER)
    progress = {"epoch": 1, "done": [1, 2, 3]}
    q.put(copy.deepcopy(progress))  # the producer keeps its own state; the message is the copy
    progress["epoch"] = 2
    progress["done"].clear()
    assert q.get() == FILLER
    received = q.get()
    q.close()
    q.join_thread()
    print(f"received: {received}")
    assert received == {"epoch": 1, "done": [1, 2, 3]}


main()
