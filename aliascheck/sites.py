"""Where a handover happened: the innermost frames outside aliascheck, cheaply.

``traceback.extract_stack`` costs tens of microseconds; walking a few frames
with ``sys._getframe`` costs about one, which matters on a worker's hot path.
"""

from __future__ import annotations

import os
import sys

_OURS = (os.path.dirname(os.path.abspath(__file__)), os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "plugins"))
_DEPTH = 5
# Frames a reader never needs: thread bootstrapping and pytest's call machinery.
_NOISE = (os.path.dirname(os.__file__) + os.sep + "threading.py", f"{os.sep}_pytest{os.sep}",
          f"{os.sep}pluggy{os.sep}")


_NODES = os.path.join(_OURS[0], "nodes")


def is_ours(filename: str) -> bool:
    """Whether *filename* is aliascheck's own machinery (the core or a bundled adapter).

    ``aliascheck/nodes`` is not: a handover inside a fixed node's worker happens there.
    """
    return filename.startswith(_OURS) and not filename.startswith(_NODES)


def _noise(filename: str) -> bool:
    return filename.startswith(_NOISE[0]) or _NOISE[1] in filename or _NOISE[2] in filename


def where(skip: int = 2) -> tuple[str, tuple[str, ...]]:
    """(innermost "file:line" outside aliascheck, up to five "file:line in func" frames)."""
    frame = sys._getframe(skip)
    while frame is not None and is_ours(frame.f_code.co_filename):
        frame = frame.f_back
    stack = []
    while frame is not None and len(stack) < _DEPTH:
        code = frame.f_code
        if not _noise(code.co_filename):
            stack.append(f"{_short(code.co_filename)}:{frame.f_lineno} in {code.co_name}")
        frame = frame.f_back
    if not stack:
        return "<unknown>", ()
    return stack[0].rpartition(" in ")[0], tuple(stack)


def _short(filename: str) -> str:
    """site-packages/torchdata/nodes/x.py -> torchdata/nodes/x.py; the cwd is dropped."""
    marker = f"{os.sep}site-packages{os.sep}"
    if marker in filename:
        return filename.rpartition(marker)[2]
    cwd = os.getcwd() + os.sep
    return filename[len(cwd):] if filename.startswith(cwd) else filename


def held_by_callers(obj: object) -> bool:
    """Whether a local variable of a frame in this thread's stack (outside aliascheck) is *obj*."""
    frame = sys._getframe(1)
    while frame is not None:
        if not is_ours(frame.f_code.co_filename) and any(v is obj for v in frame.f_locals.values()):
            return True
        frame = frame.f_back
    return False
