"""As buggy.py, but the main process reads each frame down to numbers and drops its view before asking for
the next render: a view nobody holds when the slot changes is no kept value (pushpin-groovebox#59)."""

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
    frame = np.ndarray(SHAPE, dtype=np.uint8, buffer=slot.buf)  # a view of the slot
    brightness = int(frame.sum())
    del frame
    return brightness


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
        return shown
    finally:
        del shown
        slot.close()
        slot.unlink()


if __name__ == "__main__":
    got = main()
    print(f"frames kept: {got}")
    assert got == [6, 12, 18]
