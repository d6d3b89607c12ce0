"""What the fixed nodes keep for a snapshot (``Freezer``), and what they hand out (``thaw``).

Most snapshots are never read: the consumer pops each one and drops it when the next arrives;
only a ``state_dict()`` call looks at the current one.  So the worker, which holds the GIL while
the consumer waits, pays only for a frozen form, and the copy a caller gets is made on read.
The frozen form is a pickle: the C pickler walks dicts, lists and ints 5-10x faster than any
Python-level copier (``benchmarks/bench_isolate.py``).  Two things it is slow at are kept out:

* tensors and arrays: pickling a tensor goes through ``torch.save``'s storage path, 2-8x slower
  than deepcopy (../shared/PERF-NOTES.md).  A small plain CPU tensor goes into the pickle as its
  raw bytes; any other tensor or array is copied by :func:`aliascheck.isolate` and kept aside,
  the pickle naming it by index;
* big tuples of atomic values that a source hands out again and again (a ``random.getstate()``
  RNG state: 625 ints, 20 us to pickle).  They are immutable, so, as deepcopy does, the snapshot
  may share them: once seen in two snapshots they are pre-seeded in the pickler's memo, which
  writes a 2-byte reference instead, and fed back by ``persistent_load`` on read.

A state that cannot be pickled (a lambda, a local class) is copied with ``isolate`` instead.
Every ``thaw`` makes a new copy, so what one caller does to its state reaches no one else.
"""

from __future__ import annotations

import ctypes
import io
import pickle
import sys
from typing import Any

from aliascheck.isolation import isolate

_BIG_TUPLE = 64  # items; smaller tuples pickle in under a microsecond
_BIG_PICKLE = 2048  # bytes; below this there is no big tuple worth looking for
_MAX_SEEDS = 8  # memo indices 0-7: one-byte BININT1/BINPUT opcodes in the read prefix
_MAX_INTERVAL = 64  # at most this many big pickles between two looks at the memo
_INBAND_BYTES = 1 << 16  # tensors up to this size are copied into the pickle itself


class Frozen:
    """A pickle plus what it refers to by index: private copies of tensors, shared seeds."""

    __slots__ = ("data", "side", "seeds")

    def __init__(self, data: bytes, side: list[Any], seeds: tuple[tuple, ...]) -> None:
        self.data, self.side, self.seeds = data, side, seeds

    def thaw(self) -> Any:
        data = self.data
        if self.seeds:  # replay the seeding: memo[i] = persistent_load(i), for each seed
            prefix = b"".join(b"K%cQq%c0" % (i, i) for i in range(len(self.seeds)))
            data = data[:2] + prefix + data[2:]  # after the PROTO opcode
        return _Unpickler(data, self.side, self.seeds).load()


class Copied:
    """A snapshot that could not be pickled, kept as an isolated copy."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def thaw(self) -> Any:
        return isolate(self.value, on_uncopyable="share")


def thaw(snapshot: Any) -> Any:
    """A new copy of a stored snapshot (``bytes``: a pickle with nothing aside, the most common)."""
    if isinstance(snapshot, bytes):
        return pickle.loads(snapshot)
    if isinstance(snapshot, (Frozen, Copied)):
        return snapshot.thaw()
    return isolate(snapshot, on_uncopyable="share")  # never frozen: a state passed to reset()


class Freezer:
    """Freezes the states of one worker loop: it reuses one pickler, so it is not thread-safe."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._pickler = _Pickler(self._chunks)
        self._pickles = True
        self._seeds: tuple[tuple, ...] = ()
        self._candidates: dict[int, tuple] = {}
        self._interval = self._countdown = 1

    def __call__(self, state: Any) -> bytes | Frozen | Copied:
        if self._pickles:
            try:
                return self._freeze(state)
            except Exception:
                # Not picklable. A source's states keep their shape, so stop trying: a failed
                # attempt costs a partial pickle on top of the copy.
                self._pickles = False
        return Copied(isolate(state, on_uncopyable="share"))

    def _freeze(self, state: Any) -> bytes | Frozen:
        chunks, pickler, seeds = self._chunks, self._pickler, self._seeds
        chunks.clear()
        side: list[Any] = []
        pickler.side = side
        if seeds:
            pickler.memo = {id(t): (i, t) for i, t in enumerate(seeds)}
        try:
            pickler.dump(state)
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            if len(data) > _BIG_PICKLE:
                self._maybe_discover()
        finally:
            pickler.clear_memo()  # it holds the live objects, and so their ids
        return Frozen(data, side, seeds) if side or seeds else data

    def _maybe_discover(self) -> None:
        # Reading the memo costs ~50 ns an entry: look less often while it finds nothing.
        self._countdown -= 1
        if self._countdown > 0:
            return
        seeded = {id(t) for t in self._seeds}
        big = {
            id(obj): obj
            for _, obj in self._pickler.memo.copy().values()
            if type(obj) is tuple and len(obj) >= _BIG_TUPLE and id(obj) not in seeded
        }
        # Seen in the previous look too (a candidate holds its tuple, so its id was not reused):
        # a tuple the source hands out again. A tuple is new each time does not pay the check.
        again = [t for key, t in big.items() if self._candidates.get(key) is t and isolate(t) is t]
        self._candidates = big
        if again:
            self._seeds = (*again, *self._seeds)[:_MAX_SEEDS]
            self._interval = 1
        else:
            self._interval = min(2 * self._interval, _MAX_INTERVAL)
        self._countdown = self._interval


def _side_item(index: int) -> Any:
    raise RuntimeError("only meaningful inside a Frozen snapshot")  # see _Unpickler.find_class


class _Sink:
    """Where the pickler writes: its output buffer, as is (a BytesIO would copy it twice, and
    its truncate() shrinks the buffer that the next snapshot grows again)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.write = chunks.append


class _Pickler(pickle.Pickler):
    def __init__(self, chunks: list[bytes]) -> None:
        super().__init__(_Sink(chunks), protocol=5)
        self.side: list[Any] = []

    def reducer_override(self, obj: Any) -> Any:
        # Called only for objects the C pickler does not handle itself (not int/str/dict/...).
        # It memoizes the result, so a tensor held twice is copied once.
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.Tensor):
            raw = _small_tensor_bytes(obj, torch)
            if raw is not None:
                # The dtype by name: pickling a torch.dtype makes pickle search sys.modules.
                return _tensor_from_bytes, (raw, str(obj.dtype), tuple(obj.shape))
            return self._aside(obj)
        np = sys.modules.get("numpy")
        if np is not None and isinstance(obj, np.ndarray):
            return self._aside(obj)
        return NotImplemented

    def _aside(self, obj: Any) -> Any:
        self.side.append(isolate(obj, on_uncopyable="share"))
        return _side_item, (len(self.side) - 1,)


def _small_tensor_bytes(obj: Any, torch: Any) -> bytes | None:
    """The bytes of a small plain CPU tensor, read without releasing the GIL.

    ``clone()`` and even ``numpy()`` release the GIL, and in a worker that hands it to the
    consumer, which keeps it until it blocks again: measured, a 1 us ``numpy()`` then costs the
    worker 10-100 us.  The checks below are attribute reads that keep it, and ``string_at`` is a
    memcpy; they rule out what raw bytes would not carry (autograd, conj/neg bits, layouts).
    """
    if (
        type(obj) is not torch.Tensor
        or obj.__dict__
        or not obj.is_cpu
        or obj.requires_grad
        or obj.layout is not torch.strided
        or obj.is_nested
        or obj.is_quantized
        or not obj.is_contiguous()
        or obj.is_conj()
        or obj.is_neg()
        or obj.nbytes > _INBAND_BYTES
    ):
        return None
    if not obj.nbytes:
        return b""
    try:
        return ctypes.string_at(obj.data_ptr(), obj.nbytes)
    except RuntimeError:  # e.g. a tensor wrapped by functorch has no data pointer
        return None


def _tensor_from_bytes(raw: bytes, dtype_name: str, shape: tuple[int, ...]) -> Any:
    torch = sys.modules["torch"]  # only pickles made with torch loaded name this function
    dtype = getattr(torch, dtype_name.removeprefix("torch."))
    if not raw:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, side: list[Any], seeds: tuple[tuple, ...]) -> None:
        super().__init__(io.BytesIO(data))
        self._side, self._seeds = side, seeds

    def persistent_load(self, index: Any) -> Any:
        return self._seeds[index]

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == "_side_item":
            return lambda index: isolate(self._side[index], on_uncopyable="share")
        return super().find_class(module, name)
