"""A display process renders each frame into one shared-memory slot and signals; the main process keeps a
numpy view of the slot per frame instead of copying it out (pushpin-groovebox#59's single-slot design without
its copy). Fixed: the frame is copied out of the slot, as the PR does."""

import multiprocessing as mp
from multiprocessing import shared_memory

import numpy as np

SHAPE = (2, 3)


def render(name, frames, ready, go):
    slot = shared_memory.SharedMemory(name=name)
    canvas = np.ndarray(SHAPE, dtype=np.uint8, buffer=slot.buf)
    for i in range(frames):
        if not go.wait(30):
            break
        go.clear()
        canvas[:] = i + 1  # the next render overwrites the one slot
        ready.set()
    del canvas
    slot.close()


def receive(slot, ready, go):
    go.set()
    if not ready.wait(30):
        raise TimeoutError("the display process did not render")
    ready.clear()
    frame = np.ndarray(SHAPE, dtype=np.uint8, buffer=slot.buf).copy()  # copied out of the slot
    return frame


def main():
    slot = shared_memory.SharedMemory(create=True, size=int(np.prod(SHAPE)))
    ready, go = mp.Event(), mp.Event()
    display = mp.Process(target=render, args=(slot.name, 3, ready, go))
    display.start()
    shown = []
    try:
        for _ in range(3):
            shown.append(receive(slot, ready, go))
        display.join(30)
        return [int(f[0, 0]) for f in shown]
    finally:
        del shown
        slot.close()
        slot.unlink()


if __name__ == "__main__":
    got = main()
    print(f"frames kept: {got}")
    assert got == [1, 2, 3]
