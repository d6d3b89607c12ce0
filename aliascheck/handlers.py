"""Per-type fingerprint handlers: one small function per type family.

A handler takes an object and returns a *reduction* in pickle's sense: a tuple
``(callable, args)`` whose callable is a shadow constructor (``BufferToken``,
``Opaque``...), or ``NotImplemented`` to let pickling reduce the object as usual.
Handlers are looked up by exact type, then along the MRO, and the answer is
cached per type, so the hot path costs one dict lookup per non-builtin object.

The core never imports torch or numpy: their handlers are bound lazily, the
first time an object whose type lives in those packages is seen.
"""

from __future__ import annotations

import copyreg
import ctypes
import io
import mmap
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

import xxhash

import aliascheck.mutability as mutability

from . import gate
from .shadow import SAMPLE_BYTES, BufferToken, GlobalRef, Opaque, new_instance, qualname_of, stub_type

Handler = Callable[[Any], Any]

_registry: dict[type, Handler] = {}
_cache: dict[type, Handler | None] = {mutability.Seed: None}  # seeded: tracked by gc from the start
_lock = threading.RLock()  # reentrant: a child's SIGTERM check may interrupt its holder (processes)


def register_handler(cls: type, handler: Handler | None = None) -> Any:
    """Register *handler* for *cls* and its subclasses (usable as a decorator)."""

    def add(fn: Handler) -> Handler:
        with _lock:
            _registry[cls] = fn
            _cache.clear()
        return fn

    return add if handler is None else add(handler)


def handler_for(cls: type) -> Handler | None:
    try:
        return _cache[cls]
    except KeyError:
        pass
    _bind_lazy(cls)
    found = None
    for base in cls.__mro__:
        found = _registry.get(base)
        if found is not None:
            break
    _cache[cls] = found
    return found


def unreadable(reduced: Any) -> bool:
    """Whether a handler's reduction marks something that could not be read."""
    return reduced[0] is Opaque or (reduced[0] is BufferToken and reduced[1][4] is None)


def _opaque(reason: str) -> Handler:
    return lambda obj: (Opaque, (qualname_of(type(obj)), reason))


def _global(obj: Any) -> Any:
    """Functions, classes and modules are fingerprinted by qualified identity."""
    if isinstance(obj, GlobalRef):
        return (stub_type, (obj._qualname,))
    if isinstance(obj, types.ModuleType):
        return (stub_type, (f"module:{obj.__name__}",))
    qualname = qualname_of(obj)
    # A global pickle can find again is written by name; a lambda or a local class
    # cannot, so it is written as a stub type of the same name (same shadow).
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    target: Any = module
    for part in getattr(obj, "__qualname__", "<").split("."):
        target = getattr(target, part, None)
    return NotImplemented if target is obj else (stub_type, (qualname,))


def _method(obj: types.MethodType) -> Any:
    """A bound method is an identity: its function and the object it is bound to (by identity, never
    that object's state: a dispatch table of the parser's own methods does not change when the
    parser fills its cache). Read at C level: ``__func__`` and ``__self__`` are the method's slots."""
    owner = obj.__self__
    return (stub_type, (f"{qualname_of(obj.__func__)} of {qualname_of(type(owner))} at {id(owner):#x}",))


def _memoryview(obj: memoryview) -> Any:
    try:
        data = obj.tobytes()
    except Exception as exc:  # a released view
        return (Opaque, ("builtins.memoryview", str(exc)))
    return (BufferToken, ("builtins.memoryview", obj.format, tuple(obj.shape or ()), "", digest_bytes(data)))


# A buffer's bytes as 16 (xxh3-128, at the memory's read speed), looked up by name at each read here
# and by the compiled tensor read (fingerprint._Pickler).
digest_bytes: Callable[[Any], bytes] = xxhash.xxh3_128_digest


def _sample(arr: Any) -> bytes | None:
    """The bytes of a small buffer (a copy of at most SAMPLE_BYTES), so a diff can name the elements."""
    return arr.tobytes() if arr.nbytes <= SAMPLE_BYTES else None


def _released(arr: Any) -> str:
    """Why *arr*'s memory can no longer be read, or "": numpy drops the buffer it was made over once it
    has the address, so an array over a shared-memory block or an mmap the program then closed still
    points into memory that was unmapped (reading it crashes the process). Told by the owners in its
    ``base`` chain: a released memoryview, a closed mmap."""
    base = arr.base
    for _ in range(64):  # a chain of views of views: short in practice
        if base is None:
            return ""
        kind = type(base)
        if kind is memoryview:  # released: any read raises; else its export keeps its object's memory
            try:
                base.nbytes  # noqa: B018
            except ValueError:
                return "its memory was released (the memoryview it was made over: a closed shared-memory block)"
            return ""
        if kind is mmap.mmap and base.closed:
            return "its memory was unmapped (a closed mmap)"
        if not isinstance(base, sys.modules["numpy"].ndarray):  # an array's base only, no user object's attribute
            return ""
        base = base.base
    return ""


def _ndarray(arr: Any) -> Any:
    np = sys.modules["numpy"]
    kind = qualname_of(type(arr))
    gone = _released(arr) if arr.base is not None else ""
    if gone:
        return (Opaque, (kind, gone))
    if arr.dtype.hasobject:
        # Object arrays hold references, not bytes: reduce them to their elements.
        return (stub_type(kind), (str(arr.dtype), arr.shape, arr.tolist()))
    data = arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
    raw = data.reshape(-1).view(np.uint8)
    return (BufferToken, (kind, arr.dtype.str, tuple(arr.shape), "", digest_bytes(raw), "", _sample(raw)))


# Per dtype: its name, and whether its tensors are read in place (not complex: a conjugate view's bytes
# are its base's; not quantized). Per type of torch's own (never collected): its qualified name; a
# subclass's is remembered weakly by qualname_of. Per byte count: the ctypes array
# type that views that many bytes (a few hundred sizes at most in a program; the cache stops growing at
# ARRAY_TYPES). Each saves a few hundred instructions a tensor: a model's state holds thousands.
_DTYPES: dict[Any, tuple[str, bool]] = {}
_KINDS: dict[type, str] = {}
_ARRAYS: dict[int, Any] = {}
ARRAY_TYPES = 4096
_STRIDED: Any = None  # torch.strided, once torch's handler is bound


def _dtype(dtype: Any) -> tuple[str, bool]:
    torch = sys.modules["torch"]
    quantized = {getattr(torch, name, None) for name in ("quint8", "qint8", "qint32", "quint4x2", "quint2x4")}
    known = (str(dtype).removeprefix("torch."), not (dtype.is_complex or dtype in quantized))
    _DTYPES[dtype] = known
    return known


def _memory_here(address: int, size: int, copy_limit: int) -> Any:
    """The *size* bytes at *address*: a copy when at most *copy_limit*, else viewed in place (the
    pure-Python twin of ``_gate.memory_at``)."""
    array = _ARRAYS.get(size)
    if array is None:
        array = ctypes.c_char * size
        if len(_ARRAYS) < ARRAY_TYPES:
            _ARRAYS[size] = array
    raw = array.from_address(address)
    return bytes(raw) if size <= copy_limit else raw


# One C call instead of a ctypes array type and object per read: ~250 ns less a tensor.
_memory_at: Callable[[int, int, int], Any] = gate._compiled.memory_at if gate.COMPILED else _memory_here


def _tensor(t: Any) -> Any:
    cls = type(t)
    kind = _KINDS.get(cls) or qualname_of(cls)
    dtype, in_place = _DTYPES.get(t.dtype) or _dtype(t.dtype)
    shape = tuple(t.shape)
    if in_place and t.is_cpu and t.layout is _STRIDED and t.is_contiguous():
        # The common case, read in place through its address. Not through t.numpy(),
        # t.detach(), t.is_conj() or t.is_neg(): those release the GIL, and in a worker
        # thread (a Prefetcher's, at every item) each release hands the GIL to the other
        # thread for up to a switch interval; a 5 KB generator state took ~50 us of CPU
        # there instead of ~2. Complex tensors (a conjugate view's bytes are its base's) take
        # the general path. A real tensor's negative bit (``x.conj().imag``) is not read: its
        # bytes still change when its values do.
        try:
            size = t.nbytes
            raw: Any = _memory_at(t.data_ptr(), size, SAMPLE_BYTES) if size else b""
        except (TypeError, RuntimeError, ValueError):  # a wrapper subclass without storage: below
            pass
        else:  # a small tensor's bytes are its sample (a copy); a larger one's are hashed in place
            return (BufferToken, (kind, dtype, shape, "cpu", digest_bytes(raw), "",
                                  raw if size <= SAMPLE_BYTES else None))
    torch = sys.modules["torch"]
    device = str(t.device)
    if t.device.type != "cpu" or t.is_meta:
        # Reading these bytes would copy to the host (or is impossible): say so instead.
        return (BufferToken, (kind, dtype, shape, device, None, "content not read on this device"))
    try:
        data = t.detach()
        if data.layout != torch.strided:
            return (Opaque, (kind, f"layout {data.layout} not hashed"))
        data = data.resolve_conj().resolve_neg().contiguous().reshape(-1)
        raw = data.view(torch.uint8).numpy()
    except Exception as exc:  # quantized, nested, functorch wrappers, ...
        return (Opaque, (kind, f"bytes unreadable: {type(exc).__name__}"))
    return (BufferToken, (kind, dtype, shape, device, digest_bytes(raw)))


# Below this size, reading a tensor again costs less than proving it unwritten (~3 us a tensor).
PROOF_BYTES = 1 << 16


def unwritten_proof(buffers: list[Any], reductions: list[Any]) -> list[tuple[Any, ...]]:
    """What proves a CPU tensor unwritten later, for each tensor in *buffers* read in place (its
    reduction in *reductions*): ``(tensor, _version, data_ptr, storage users, references, reduction)``.

    Every in-place write through the tensor or a view of it bumps ``_version``; ``.data`` and
    ``.detach()`` aliases add a user to the storage, a NumPy view a reference to the tensor. With all
    four unchanged, nothing can have written it since, but a view made and dropped in between."""
    torch = sys.modules.get("torch")
    if torch is None or len(buffers) != len(reductions):
        return []
    proof = []
    for i in range(len(buffers)):  # by index: a zip's reused tuple would hold the tensor once more
        t = buffers[i]
        reduced = reductions[i]
        if type(t) is not torch.Tensor or type(reduced) is not tuple or reduced[0] is not BufferToken:
            continue
        token = reduced[1]
        if len(token) < 5 or token[3] != "cpu" or token[4] is None or t.nbytes < PROOF_BYTES:
            continue
        refs = sys.getrefcount(t)  # buffers' entry, t and the argument: as still_unwritten counts
        proof.append((t, t._version, t.data_ptr(), _storage_users(t), refs, reduced))
    return proof


def still_unwritten(proof: list[tuple[Any, ...]]) -> dict[int, Any]:
    """The reductions, by id, of the tensors in *proof* nothing can have written since it was made
    (for :func:`aliascheck.fingerprint.fingerprint`'s *then*); the others are read again."""
    then = {}
    for entry in proof:
        t = entry[0]
        refs = sys.getrefcount(t)  # the proof's entry, t and the argument
        try:
            same = (t._version == entry[1] and t.data_ptr() == entry[2] and refs == entry[4]
                    and _storage_users(t) == entry[3] and tuple(t.shape) == entry[5][1][2])
        except Exception:
            same = False
        if same:
            then[id(t)] = entry[5]
    return then


def _storage_users(t: Any) -> int:
    return sys.modules["torch"]._C._storage_Use_Count(t.untyped_storage()._cdata)


def _bind_lazy(cls: type) -> None:
    """Register the torch/numpy handlers once their package is imported."""
    root = (cls.__module__ or "").partition(".")[0]
    if root == "numpy" and "numpy" in sys.modules:
        np = sys.modules["numpy"]
        if np.ndarray not in _registry:
            register_handler(np.ndarray, _ndarray)
    elif root == "torch" and "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.Tensor not in _registry:
            global _STRIDED
            _STRIDED = torch.strided
            _KINDS.update({cls: qualname_of(cls) for cls in (torch.Tensor, torch.nn.Parameter)})
            register_handler(torch.Tensor, _tensor)
            register_handler(torch.Generator, _opaque("torch.Generator: fingerprint get_state() instead"))


def _code(code: types.CodeType) -> Any:
    """A code object (a ``dis.Instruction``'s argument, a function's ``__code__`` kept as data): immutable,
    written as which code it is. Pickle cannot write one, and a value holding one would otherwise be
    walked in Python (executing's suite caches lists of instructions: 54 ms a look)."""
    name = getattr(code, "co_qualname", code.co_name)
    return (stub_type, (f"code {name} at {code.co_filename}:{code.co_firstlineno}",))


def _builtin_handlers() -> None:
    cls: type  # both loops bind it; mypy would otherwise type it from the first tuple alone
    for cls in (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType, GlobalRef):
        register_handler(cls, _global)
    register_handler(memoryview, _memoryview)
    register_handler(types.MethodType, _method)
    register_handler(types.CodeType, _code)
    opaque: dict[type, str] = {
        type(threading.Lock()): "a lock",
        type(threading.RLock()): "a lock",
        types.GeneratorType: "a generator's position cannot be read",
        types.CoroutineType: "a coroutine",
        types.AsyncGeneratorType: "an async generator",
        types.FrameType: "a frame",
        types.TracebackType: "a traceback",
        io.IOBase: "an open stream",
        threading.Thread: "a thread",
    }
    for cls, reason in opaque.items():
        register_handler(cls, _opaque(reason))
    try:
        import socket

        register_handler(socket.socket, _opaque("a socket"))
    except ImportError:  # pragma: no cover
        pass


_builtin_handlers()


# -- a plain instance, reduced without asking it (the fingerprint's pickler and its walk) --

_OBJECT_STATE = getattr(object, "__getstate__", None)
# Weak: a class's module lives on otherwise. One entry from the start: its table is tracked by gc then.
_plain: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary([(mutability.Seed, False)])


def plain_reduction(obj: Any) -> Any:
    """An instance of a class that keeps pickle's defaults, reduced as ``object.__reduce_ex__``
    would (a new instance, its attribute dict) but without asking the object anything: its
    ``__reduce_ex__``, ``__getstate__``, ``__class__`` and ``__getattribute__`` are the program's
    code, and fingerprinting never runs it where the class did not ask for it. Anything else:
    NotImplemented, pickle's own way."""
    cls = type(obj)
    plain = _plain.get(cls)
    if plain is None:
        plain = _plain[cls] = _keeps_defaults(cls)
    if not plain:
        return NotImplemented
    try:
        state = object.__getattribute__(obj, "__dict__")
    except Exception:
        return NotImplemented
    if type(state) is not dict:
        return NotImplemented
    return new_instance, (cls,), state or None


def _keeps_defaults(cls: type) -> bool:
    try:
        return (cls.__reduce_ex__ is object.__reduce_ex__ and cls.__reduce__ is object.__reduce__
                and getattr(cls, "__getstate__", None) is _OBJECT_STATE
                and getattr(cls, "__getnewargs_ex__", None) is None and getattr(cls, "__getnewargs__", None) is None
                and cls.__dictoffset__ != 0 and not mutability.slot_names(cls) and cls not in copyreg.dispatch_table
                and bool(cls.__flags__ & _HEAPTYPE))
    except Exception:
        return False


_HEAPTYPE = 1 << 9
