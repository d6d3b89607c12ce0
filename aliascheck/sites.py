"""Where a handover happened: the innermost frames outside aliascheck, cheaply.

``traceback.extract_stack`` costs tens of microseconds; walking a few frames
with ``sys._getframe`` costs about one, which matters on a worker's hot path.
"""

from __future__ import annotations

import dis
import itertools
import os
import sys
import weakref
from collections.abc import Iterator, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType

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


class Where:
    """Where a handover happened, kept raw: up to five (code object, instruction offset) pairs,
    innermost first.

    Capturing costs a few frame hops and no string, not even a line number (``f_lineno``
    scans the code's line table: it cost more than the rest of a capture); the lines, file
    names and text are built only when a finding is reported (:attr:`site`, :attr:`stack`),
    once. One capture for every kind of handover: the ledger's records, messages, cache
    values, copies.
    """

    __slots__ = ("frames", "_text")

    def __init__(self, frames: tuple[tuple[Any, int], ...]) -> None:
        self.frames = frames
        self._text: tuple[str, tuple[str, ...]] | None = None

    @property
    def key(self) -> tuple[Any, int] | None:
        """The innermost frame as (code, line): what identifies a call site without text."""
        if not self.frames:
            return None
        code, offset = self.frames[0]
        return code, line_of(code, offset)

    @property
    def site(self) -> str:
        return self.text()[0]

    @property
    def stack(self) -> tuple[str, ...]:
        return self.text()[1]

    def text(self) -> tuple[str, tuple[str, ...]]:
        """(innermost "file:line", up to five "file:line in func"); a frame with no file is
        ``<unknown>:line``."""
        if self._text is None:
            cwd = os.getcwd()
            stack = tuple(f"{_name(code, cwd)}:{line_of(code, offset)} in {getattr(code, 'co_name', '?')}"
                          for code, offset in self.frames)
            self._text = (stack[0].rpartition(" in ")[0] if stack else "<unknown>"), stack
        return self._text


_lines: dict[tuple[Any, int], int] = {}  # (code, instruction offset) -> line
_LINES_MAX = 65536


def line_of(code: Any, offset: int) -> int:
    """The line of the instruction at *offset* in *code* (what ``frame.f_lineno`` says), 0 if none."""
    line = _lines.get((code, offset))
    if line is None:
        line = 0
        for start, end, number in getattr(code, "co_lines", tuple)():
            if start <= offset < end:
                line = number or 0
                break
        if len(_lines) >= _LINES_MAX:
            _lines.clear()
        _lines[code, offset] = line
    return line


def _name(code: Any, cwd: str) -> str:
    file = getattr(code, "co_filename", None)
    if not file:
        return "<unknown>"
    name = _shorts.get((file, cwd))
    if name is None:
        name = _shorts[file, cwd] = _short(file, cwd)
    return name


# co_filename -> 0: aliascheck's own frame, 1: a frame never shown (threading, pytest), 2: shown
_kinds: dict[str, int] = {}


def _kind(file: str) -> int:
    kind = _kinds.get(file)
    if kind is None:
        kind = _kinds[file] = 0 if is_ours(file) else 1 if _noise(file) else 2
    return kind


# (id of a runner's frame, its instruction) -> (its code, the frames shown from it outward). The
# runner's machinery (pytest, pluggy, threading) is the same for every handover of a test: it is
# walked once, not at each handover (a pytest stack is ~40 frames deep).
_outer: dict[tuple[int, int], tuple[Any, tuple[tuple[Any, int], ...]]] = {}
_OUTER_MAX = 4096


# Code of project methods whose recording runs inside their own body (aliascheck.boundary.runtime.ACTIVE):
# a capture made from that recording passes over the method's frame, as it passes over a wrapper's.
# id(code) -> (code, how many sessions): keyed by id, since a code object's hash is recomputed on every
# lookup, from its constants down (4 us for a module's), and the code is held so that its id stays its own.
INSIDE: dict[int, tuple[Any, int]] = {}


def capture(skip: int = 2) -> Where:
    """The caller's frames outside aliascheck, raw (*skip*: frames to pass over first)."""
    frame: FrameType | None = sys._getframe(skip)
    kinds = _kinds
    while frame is not None:  # aliascheck's own frames (kind 0) are passed over
        file = frame.f_code.co_filename
        kind = kinds.get(file)
        if kind is None:
            kind = _kind(file)
        if kind:
            break
        frame = frame.f_back
    if frame is not None and INSIDE and id(frame.f_code) in INSIDE and frame.f_back is not None:
        frame = frame.f_back  # the method recording itself: its caller is where the state went
    frames: list[tuple[Any, int]] = []
    while frame is not None:
        code = frame.f_code
        kind = kinds.get(code.co_filename)
        if kind is None:
            kind = _kind(code.co_filename)
        if kind == 1:  # the runner's machinery: what is shown from here outward is known once
            frames += _outward(frame)[:_DEPTH - len(frames)]
            break
        frames.append((code, frame.f_lasti))
        if len(frames) == _DEPTH:
            break
        frame = frame.f_back
    return Where(tuple(frames))


# Where a message's sender is not the user's: the standard library, installed packages, aliascheck (its
# nodes included: a fixed node's worker queue is its own plumbing) and frozen modules.
_SENDERS_NOT = (os.path.dirname(os.__file__) + os.sep, _OURS[0] + os.sep, _OURS[1] + os.sep, "<frozen ")
_users: dict[int, tuple[Any, bool]] = {}  # id(code) -> (code, whether it is the user's): see INSIDE
# (code, instruction offset) -> its one-frame Where: a send site makes one, not one per message (each
# would be three more objects for the garbage collector to track while the message is in flight).
_senders: dict[tuple[int, int], Where] = {}  # by id(code): its Where holds the code


def sender(past: frozenset[str] = frozenset(), skip: int = 2) -> Where | None:
    """The frame that called in (*skip* frames up, past the channel's own frames in *past*), as a
    one-frame :class:`Where`; None when that code is not the user's (a library's own queue).

    One frame, not five: a message is recorded on every send, and its line is what a reader needs.
    """
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None and frame.f_code.co_filename in past:
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    known = _users.get(id(code))
    if known is None:
        file = code.co_filename
        known = _users[id(code)] = (code, not file.startswith(_SENDERS_NOT) and not any(p in file for p in _PACKAGES))
    if not known[1]:
        return None
    lasti = frame.f_lasti
    where = _senders.get((id(code), lasti))
    if where is None:
        if len(_senders) >= _OUTER_MAX:
            _senders.clear()
        where = _senders[(id(code), lasti)] = Where(((code, lasti),))
    return where


def _outward(frame: FrameType) -> tuple[tuple[Any, int], ...]:
    key = (id(frame), frame.f_lasti)  # a suspended frame's instruction does not move
    known = _outer.get(key)
    if known is not None and known[0] is frame.f_code:
        return known[1]
    code = frame.f_code
    shown: list[tuple[Any, int]] = []
    one: FrameType | None = frame
    while one is not None and len(shown) < _DEPTH:
        if _kind(one.f_code.co_filename) == 2:  # neither runner machinery nor aliascheck (a wrapper)
            shown.append((one.f_code, one.f_lasti))
        one = one.f_back
    if len(_outer) >= _OUTER_MAX:
        _outer.clear()
    found = tuple(shown)
    _outer[key] = (code, found)
    return found


def where(skip: int = 2) -> tuple[str, tuple[str, ...]]:
    """(innermost "file:line" outside aliascheck, up to five "file:line in func" frames), as text now."""
    return capture(skip + 1).text()


_shorts: dict[tuple[str, str], str] = {}  # (file, cwd) -> the short name, "" for a frame never shown


def _short(filename: str, cwd: str | None = None) -> str:
    """site-packages/torchdata/nodes/x.py -> torchdata/nodes/x.py; the cwd is dropped."""
    marker = f"{os.sep}site-packages{os.sep}"
    if marker in filename:
        return filename.rpartition(marker)[2]
    cwd = (os.getcwd() if cwd is None else cwd) + os.sep
    return filename[len(cwd):] if filename.startswith(cwd) else filename


# The standard library's reconstruction machinery hands a state through to ``__setstate__``
# and drops it: its frames' locals are not holders (``copy._reconstruct``'s ``state``).
_PASSING = tuple(os.path.join(os.path.dirname(os.__file__), name) for name in ("copy.py", "pickle.py", "copyreg.py"))


_LAUNCH = os.path.join(os.path.dirname(os.__file__), "multiprocessing", "popen_fork.py")
_dead: set[int] = set()  # ids of the frames a forked child inherited and will never run again


def inherit_frames(frame: FrameType | None) -> bool:
    """In a forked child, from the frame that forked: note the inherited frames that never run again.

    multiprocessing's ``Popen._launch`` forks, runs the child's work and leaves by
    ``os._exit``: it and every frame above it (the parent's test, its ``DataLoader``)
    are the parent's stack, frozen in the child. Their locals hold the parent's objects,
    not keepers of the child's state. Returns False when the fork came from elsewhere
    (``os.fork`` in the user's code, whose frame goes on in the child): then nothing is
    known, and every frame counts as before.
    """
    _dead.clear()
    chain = []
    while frame is not None:
        chain.append(frame)
        frame = frame.f_back
    for i, one in enumerate(chain):
        if one.f_code.co_name == "_launch" and one.f_code.co_filename == _LAUNCH:
            _dead.update(map(id, chain[i:]))  # alive in the child until os._exit: no id is reused
            return True
    return False


def inherited() -> bool:
    """Whether this is a forked child that knows which inherited frames never run again: a plain
    container there holds a value only if something else holds the container (it may be the
    parent's checkpoint, frozen in the child with the frames that held it)."""
    return bool(_dead)


def frames_looked_at() -> list[FrameType]:
    """The frames :func:`held_by_callers` looks at: this thread's callers, and the test frames held."""
    return list(itertools.chain(_callers(sys._getframe(1)), _test_frames))


def held_by_callers(obj: object, released: Mapping[int, Set[str]] | None = None) -> bool:
    """Whether a local variable of a frame in this thread's stack (outside aliascheck), or of a test
    function's frame held until the test's end check (:func:`hold_test_frame`), is *obj*. *released*:
    by frame id, the names a test function read for the last time: they hold nothing any more."""
    for frame in itertools.chain(_callers(sys._getframe(1)), _test_frames):
        gone = released.get(id(frame), ()) if released else ()
        if any(v is obj and k not in gone for k, v in frame.f_locals.items()):
            return True
    return False


# Test functions' frames a handover was made under: their names are the test's holders until the
# call phase's end check (``best = model.state_dict()`` in the test body, judged after the test
# returned). Held only till then, as the boundary holds the frames its records name.
_test_frames: list[FrameType] = []


def hold_test_frame(frame: FrameType | None, levels: int = 16) -> bool:
    """From *frame* out, the first frame the test runner called (the test function's own), held.
    Whether there was one (a thread of the test's own has none)."""
    while frame is not None and levels:
        caller = frame.f_back
        if caller is not None and "_pytest" in caller.f_code.co_filename and not is_ours(frame.f_code.co_filename):
            if all(held is not frame for held in _test_frames):
                _test_frames.append(frame)
            return True
        frame, levels = caller, levels - 1
    return False


def release_test_frames() -> None:
    _test_frames.clear()


def callers_locals() -> list[Any]:
    """The values of the local variables :func:`held_by_callers` looks at."""
    return [v for frame in _callers(sys._getframe(1)) for v in frame.f_locals.values()]


def _callers(frame: FrameType | None) -> Iterator[FrameType]:
    """This thread's frames from *frame* out that can still hold a value: not aliascheck's, not
    copy's or pickle's passing it through, not a forked child's inherited frames."""
    first = True
    while frame is not None:
        file = frame.f_code.co_filename
        if not is_ours(file) and file not in _PASSING and id(frame) not in _dead:
            # A method recording itself (its body's inserted exit) has returned, as far as its
            # caller knows: its frame is the wrapper's would be, none of the program's holders.
            if not (first and id(frame.f_code) in INSIDE):
                yield frame
            first = False
        frame = frame.f_back


# Where code that is not the user's lives: the standard library and installed packages.
_LIBRARY = (os.path.dirname(os.__file__) + os.sep,)
_PACKAGES = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
_origins: weakref.WeakKeyDictionary[type, dict[tuple[str, ...], str]] = weakref.WeakKeyDictionary()


def origin(cls: type, methods: Sequence[str], users_only: bool = True) -> str:
    """``file:line in module.Qualname.method``: the user's own method of *cls* among *methods*.

    The most derived class's method wins (``Shards.get_state`` over torchdata's
    ``BaseNode.state_dict``, which only calls it); methods in installed packages,
    the standard library or aliascheck are not the user's and are passed over, so
    a ``torch.nn.Linear`` has none (its handover site names the user's line).
    The line is the method's one ``return``, or its ``def`` line when it has several.
    Computed once per class. *users_only=False* also takes a library's method (a
    library node that keeps the checkpoint it was given: the line is still the fix).
    """
    try:
        known = _origins.setdefault(cls, {})
    except TypeError:  # not weakly referenceable
        known = {}
    key = (*methods, "" if users_only else "*")
    if key not in known:
        known[key] = _find_origin(cls, tuple(methods), users_only)
    return known[key]


def _find_origin(cls: type, methods: tuple[str, ...], users_only: bool) -> str:
    for klass in getattr(cls, "__mro__", ()):
        for name in methods:
            fn = _unwrap(klass.__dict__.get(name))
            code = getattr(fn, "__code__", None)
            if code is None or (users_only and _not_users(code.co_filename)):
                continue
            if not users_only and is_ours(code.co_filename):
                continue
            qualname = f"{getattr(fn, '__module__', '') or ''}.{getattr(fn, '__qualname__', name)}".lstrip(".")
            return f"{_short(code.co_filename)}:{_return_line(code)} in {qualname}"
    return ""


def _unwrap(fn: Any) -> Any:
    for _ in range(8):  # aliascheck's wrapper, functools.wraps, staticmethod/classmethod
        inner = getattr(fn, "__aliascheck_original__", None) or getattr(fn, "__wrapped__", None) \
            or getattr(fn, "__func__", None)
        if inner is None:
            return fn
        fn = inner
    return fn


def _not_users(filename: str) -> bool:
    return (filename.startswith(("<", *_LIBRARY)) or any(p in filename for p in _PACKAGES)
            or is_ours(filename))


def _return_line(code: Any) -> int:
    starts = sorted((offset, line) for offset, line in dis.findlinestarts(code) if line is not None)
    lines = set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("RETURN_VALUE", "RETURN_CONST"):
            lines.add(next((line for offset, line in reversed(starts) if offset <= ins.offset), 0))
    return lines.pop() if len(lines) == 1 else code.co_firstlineno
