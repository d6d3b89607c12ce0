"""Ordinary project code for the semantics probes: objects that count and log what is done to them,
and functions that perform each statement shape aliascheck's rewriter marks on them.

Nothing here knows about aliascheck. Each function returns (or leaves in a log) exactly what plain
Python does; ``test_*.py`` beside it pins those results, and the same tests must pass unchanged under
``pytest --aliascheck``.
"""

from __future__ import annotations

import abc
import argparse
import collections
import copy
import gc
import sys
import traceback
import weakref
from functools import cached_property
from typing import Any

LOG: list[str] = []  # one shared order log; each probe clears it first


def clear() -> None:
    del LOG[:]


# -- objects that count what is done to them ------------------------------------------


class Counted:
    """Properties that count their reads."""

    def __init__(self, value: object = None) -> None:
        self.reads = 0
        self.child_reads = 0
        self._value = value if value is not None else [1, [2]]
        self._child: Counted | None = None
        self.p = 0

    @property
    def prop(self) -> object:
        self.reads += 1
        return self._value

    @property
    def child(self) -> Counted:
        self.child_reads += 1
        if self._child is None:
            self._child = Counted()
        return self._child

    def make(self, *args: object) -> list[object]:
        return [list(args)]

    def items_list(self) -> list[int]:
        return [1, 2, 3]


class LoggingMap(dict):
    """A dict whose item access is counted and logged in order."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.gets = 0
        self.sets = 0
        self.item_calls = 0

    def __getitem__(self, key: object) -> object:
        self.gets += 1
        LOG.append(f"get {key!r}")
        return super().__getitem__(key)

    def __setitem__(self, key: object, value: object) -> None:
        self.sets += 1
        LOG.append(f"set {key!r}")
        super().__setitem__(key, value)

    def items(self):  # type: ignore[override]
        self.item_calls += 1
        LOG.append("items")
        return super().items()

    def values(self):  # type: ignore[override]
        LOG.append("values")
        return super().values()

    def copy(self) -> LoggingMap:
        LOG.append("copy")
        new = LoggingMap()
        dict.update(new, self)
        return new


class OneShot:
    """An LRU-like cache that evicts what it hands out: each read removes the key."""

    def __init__(self, data: dict[object, object]) -> None:
        self.data = dict(data)
        self.misses = 0

    def __getitem__(self, key: object) -> object:
        try:
            return self.data.pop(key)
        except KeyError:
            self.misses += 1
            raise

    def __setitem__(self, key: object, value: object) -> None:
        self.data[key] = value

    def __contains__(self, key: object) -> bool:
        return key in self.data


class Dynamic:
    """Attributes made up by ``__getattr__``; every miss is logged."""

    def __init__(self) -> None:
        self.misses: list[str] = []

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        misses = object.__getattribute__(self, "misses")
        misses.append(name)
        if name == "data":
            return [[1], [2]]
        raise AttributeError(name)

    def __iter__(self):
        return iter([[1], [2], [3]])


class Marker(abc.ABC):  # noqa: B024 - an ABC without abstract methods, for isinstance()
    pass


def describe(obj: object) -> str:
    return type(obj).__name__


class Traced:
    """boltons' debugutils shape: ``__getattribute__`` logs, asks ``isinstance(self, Marker)``
    and hands ``self`` to a function. A guard keeps the plain class from recursing into itself."""

    seen: list[tuple[str, bool, str]] = []
    _busy = False

    def __init__(self) -> None:
        self.x = [1]

    def __getattribute__(self, name: str) -> object:
        if not Traced._busy:
            Traced._busy = True
            try:
                Traced.seen.append((name, isinstance(self, Marker), describe(self)))
            finally:
                Traced._busy = False
        return object.__getattribute__(self, name)


class CountingList(list):
    """A list whose reads by index are counted."""

    reads = 0

    def __getitem__(self, index):  # type: ignore[override]
        CountingList.reads += 1
        return super().__getitem__(index)


class Cached:
    computed = 0

    @cached_property
    def value(self) -> list[int]:
        Cached.computed += 1
        return [Cached.computed]


class Tracked:
    """Instances alive right now, by a class-level WeakSet."""

    live: weakref.WeakSet[Tracked] = weakref.WeakSet()

    def __init__(self, payload: object = None) -> None:
        self.payload = payload if payload is not None else {"a": [1, 2]}
        Tracked.live.add(self)


class Base:
    def __init__(self, x: object) -> None:
        LOG.append(f"Base.__init__ {x!r}")
        self.x = x


class Derived(Base):
    def __init__(self, x: object) -> None:
        LOG.append("Derived.__init__")
        super().__init__(x)


class Manager:
    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> list[str]:
        LOG.append(f"enter {self.name}")
        return [self.name]

    def __exit__(self, *exc: object) -> None:
        LOG.append(f"exit {self.name}")


# -- state-protocol classes (aliascheck wraps their methods) -------------------------


class Env:
    """get_state / reset: torchdata.nodes' protocol, with a no-argument reset()."""

    def __init__(self) -> None:
        self.pos = 0
        self.items: list[object] = [Traced()]
        self.callers: list[str] = []

    def get_state(self) -> dict[str, object]:
        self.callers.append(sys._getframe(1).f_code.co_name)
        return {"pos": self.pos}

    def reset(self) -> None:
        self.callers.append(sys._getframe(1).f_code.co_name)
        self.pos = 0

    def step(self) -> int:
        self.callers.append(sys._getframe(1).f_code.co_name)
        self.pos += 1
        return self.pos

    def walk(self, n: int = 0) -> int:
        """A recursive method of a state-protocol class (not itself a protocol method)."""
        self.walked = n
        return self.walk(n + 1)


class Module:
    """state_dict / load_state_dict, load_state_dict's parameters named as torch names them."""

    def __init__(self) -> None:
        self.weight = [0.0, 1.0]
        self.loaded: list[tuple[object, bool]] = []
        self.depth = 0

    def state_dict(self, depth: int = 0) -> dict[str, object]:
        return {"weight": list(self.weight)}

    def load_state_dict(self, state_dict: dict[str, object], strict: bool = True) -> None:
        self.loaded.append((state_dict, strict))
        self.weight = list(state_dict["weight"])  # type: ignore[call-overload]

    def raising(self) -> None:
        raise ValueError("raising")


class Deep:
    """A state-protocol class whose handover method is recursive."""

    reached = 0

    def state_dict(self, n: int = 0) -> dict[str, object]:
        Deep.reached = n
        return self.state_dict(n + 1)

    def load_state_dict(self, state_dict: dict[str, object]) -> None:
        raise RuntimeError("raising load")  # the line tests read (RAISE-LOAD)


class Extra:
    """get_extra_state / set_extra_state: an nn.Module's extra state."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def get_extra_state(self) -> dict[str, object]:
        self.calls.append("get")
        return {"calls": len(self.calls)}

    def set_extra_state(self, state: dict[str, object]) -> None:
        self.calls.append(f"set {state!r}")


class Picklable:
    """__getstate__ / __setstate__ counted; its state holds a Traced object."""

    gets = 0
    sets = 0

    def __init__(self) -> None:
        self.data = {"k": [1, 2]}
        self.traced = Traced()

    def __getstate__(self) -> dict[str, object]:
        Picklable.gets += 1
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, object]) -> None:
        Picklable.sets += 1
        self.__dict__.update(state)


def plain_recursive(n: int = 0) -> int:
    global PLAIN_REACHED
    PLAIN_REACHED = n
    return plain_recursive(n + 1)


PLAIN_REACHED = 0


# -- the statement shapes ----------------------------------------------------------------


def append_prop(obj: Counted) -> list[object]:
    out: list[object] = []
    out.append(obj.prop)
    return out


def append_item(d: LoggingMap, k: object) -> list[object]:
    out: list[object] = []
    out.append(d[k])
    return out


def append_oneshot(cache: OneShot, k: object) -> list[object]:
    out: list[object] = []
    out.append(cache[k])
    return out


def append_missing(obj: Dynamic) -> list[object]:
    out: list[object] = []
    out.append(obj.data)
    return out


def append_call(out: CountingList, obj: Counted) -> CountingList:
    out.append(obj.make(1))
    return out


def set_item(d: LoggingMap, k: object, v: object) -> None:
    d[k] = v


def set_item_prop(d: LoggingMap, obj: Counted) -> None:
    d["p"] = obj.prop


def set_item_through_prop(holder: Counted, v: object) -> None:
    holder.child.__dict__["slot"] = v


def set_attr_through_prop(holder: Counted, v: object) -> None:
    holder.child.p = v


def augment_attr(obj: Counted) -> None:
    obj.p += 1


def augment_through_prop(holder: Counted) -> None:
    holder.child.p += 1


def augment_item(d: LoggingMap, k: object) -> None:
    d[k] += 1


def call_order() -> dict[str, object]:
    box: dict[str, object] = {}

    def f() -> dict[str, object]:
        LOG.append("f")
        return box

    def g() -> str:
        LOG.append("g")
        return "k"

    def h() -> list[int]:
        LOG.append("h")
        return [1]

    f()[g()] = h()
    return box


def walrus(obj: Counted) -> tuple[list[object], object]:
    out: list[object] = []
    out.append(y := obj.prop)
    return out, y


def starred(obj: Counted) -> tuple[object, list[object]]:
    first, *rest = obj.prop  # type: ignore[misc]
    return first, rest


def chained(d: LoggingMap, obj: Counted) -> object:
    a = d["c"] = obj.make(obj.prop)
    return a


def tuple_target(obj: Counted) -> tuple[object, object]:
    a, b = obj.make(1), obj.child.make(2)
    return a, b


def for_over(obj: Dynamic) -> list[object]:
    out: list[object] = []
    for x in obj:
        out.append(x)
    return out


def for_over_generator() -> list[object]:
    def gen():
        # One list, filled first and yielded three times as it is: the loop's items are that very
        # object. (Filled between yields, every kept item would be the last: a reused buffer, which
        # --aliascheck reports; tests/test_boundary.py has that twin.)
        buf: list[int] = [0, 1]
        buf.append(2)
        for _ in range(3):
            yield buf

    out: list[object] = []
    for item in gen():
        out.append(item)
    return out


def with_target() -> list[str]:
    with Manager("a") as got:
        LOG.append(f"body {got!r}")
    return got


def comprehension(obj: Counted) -> list[object]:
    acc: list[object] = []
    [acc.append(x) for x in obj.items_list()]  # noqa: B018 - the shape itself
    return acc


def bind_call(holder: Counted) -> object:
    res = holder.child.make(1)
    return res


def pass_through_prop(holder: Counted) -> object:
    res = describe(holder.child)
    return res


def method_through_prop(holder: Counted, v: object) -> object:
    res = holder.child.make(v)
    return res


def make_lambda():
    acc: list[object] = []
    keep = lambda x: acc.append(x)  # noqa: E731 - the hook shape
    return keep, acc


def construct(x: object) -> Derived:
    return Derived(x)


def copy_of(d: LoggingMap) -> LoggingMap:
    x = d.copy()
    return x


def copy_module(d: LoggingMap) -> LoggingMap:
    x = copy.copy(d)
    return x


def run_exec(src: str, ns: dict[str, object]) -> dict[str, object]:
    exec(src, ns)
    return ns


def keep_traced(t: Traced) -> dict[str, object]:
    d: dict[str, object] = {}
    d["t"] = t
    out = []
    out.append(t)
    for item in [t]:
        out.append(item)
    res = describe(t)
    t.x = [2]
    return {"d": d, "out": out, "res": res}


# -- lifetimes ---------------------------------------------------------------------------


def send_to_receivers(receivers: list[object]) -> list[tuple[object, object]]:
    """blinker's send: (receiver, result) pairs kept in a list the caller may drop at once."""
    results = []
    for receiver in receivers:
        results.append((receiver, receiver()))  # type: ignore[operator]
    return results


class ItemsHolder:
    """An attribute holding a list of another module's objects (mistune's parser state)."""

    def __init__(self) -> None:
        self.items = [argparse.Namespace()]


def local_weakref(callback) -> weakref.ref[Tracked]:
    obj = Tracked()
    ref = weakref.ref(obj, callback)
    rows: list[object] = []
    rows.append(obj)
    rows.append(obj.payload)
    index: dict[str, object] = {}
    index["obj"] = obj
    index["payload"] = obj.payload
    got = list(obj.payload["a"])  # type: ignore[index]
    rows.append(got)
    return ref


def churn() -> int:
    made = Tracked()
    keep: list[object] = []
    keep.append(made)
    keep.append(made.payload)
    table: dict[str, object] = {}
    table["t"] = made
    other = made.payload.copy()  # type: ignore[attr-defined]
    other["b"] = [3]
    total = len(keep) + len(other)
    return total


PREV, NEXT, KEY, VALUE = range(4)


def copy_and_drop() -> int:
    """A shallow copy sharing a list with its source; both dropped at the return."""
    holder = {"parts": [Tracked()]}
    view = holder.copy()
    return len(view["parts"])


def objects_after(block, beyond_records: bool = False) -> int:
    """How many more objects gc tracks after *block* ran than before (collected both times).

    *beyond_records*: leave out what the aliascheck runtime's own modules reach (its records of
    the test: kept in the test's ledger until the test's end check, by design); in a plain run
    there is none, and everything the program made still counts."""
    gc.collect()
    before = _counted(beyond_records)
    block()
    gc.collect()
    return _counted(beyond_records) - before


def _counted(beyond_records: bool) -> int:
    objects = gc.get_objects()
    if not beyond_records:
        return len(objects)
    roots = [vars(m) for name, m in list(sys.modules.items()) if name.startswith("aliascheck") and m is not None]
    seen = {id(r) for r in roots}
    level = roots
    while level:  # the runtime's closure, level by level at C speed
        level = [o for o in gc.get_referents(*level) if id(o) not in seen and not seen.add(id(o))]
    return sum(1 for o in objects if id(o) not in seen) - 1  # less this function's own list


def build_ring(n: int) -> int:
    """A boltons LRU's linked ring of ``[prev, next, key, value]`` lists."""
    root: list[object] = []
    root[:] = [root, root, None, None]
    links = {}
    for key in range(n):
        last = root[PREV]
        link = [last, root, key, [key]]
        last[NEXT] = link  # type: ignore[index]
        root[PREV] = link
        links[key] = link
    count = 0
    node = root[NEXT]
    while node is not root:
        count += 1
        node = node[NEXT]  # type: ignore[index]
    root[:] = []
    return count


# -- frames, namespaces, line numbers -------------------------------------------------


def locals_of_shapes(obj: Counted, d: LoggingMap) -> list[str]:
    out: list[object] = []
    out.append(obj.prop)
    d["k"] = out
    res = obj.make(out)
    for x in res:
        out.append(x)
    obj.p += 1
    y = d.copy()
    del y
    return sorted(sys._getframe().f_locals)


def raise_in_setitem() -> traceback.FrameSummary:
    d = Refusing()
    try:
        d["k"] = [1]  # RAISE-SET
    except KeyError as e:
        return traceback.extract_tb(e.__traceback__)[-1]
    raise AssertionError("no raise")


def raise_after_keep() -> list[traceback.FrameSummary]:
    out: list[object] = []
    try:
        out.append([1])
        res = Counted().make(out)
        raise ValueError(res)  # RAISE-AFTER
    except ValueError as e:
        return traceback.extract_tb(e.__traceback__)


class Refusing(dict):
    def __setitem__(self, key: object, value: object) -> None:
        raise KeyError(key)  # RAISE-IN-SETITEM


def make_class() -> tuple[str, str]:
    class Local:
        caller = sys._getframe(1).f_code.co_name

        def __init_subclass__(cls) -> None:
            cls.sub_caller = sys._getframe(1).f_code.co_name

    class Sub(Local):
        pass

    return Local.caller, Sub.sub_caller  # type: ignore[attr-defined]


def make_protocol_class() -> tuple[str, str]:
    class LocalState:
        caller = sys._getframe(1).f_code.co_name

        def state_dict(self) -> dict[str, object]:
            return {"caller": sys._getframe(1).f_code.co_name}

        def load_state_dict(self, state_dict: dict[str, object]) -> None:
            pass

    return LocalState.caller, LocalState().state_dict()["caller"]  # type: ignore[return-value]


def call_get_state(env: Env) -> dict[str, object]:
    return env.get_state()


def call_reset(env: Env) -> None:
    env.reset()


def call_step(env: Env) -> int:
    return env.step()


def peek() -> list[str]:
    """The caller's local names right now (as a debugger or a tracing library sees them)."""
    return sorted(sys._getframe(1).f_locals)


def locals_mid_statement(obj: Counted, d: LoggingMap) -> list[list[str]]:
    seen = []
    out: list[object] = []
    out.append(obj.prop)
    seen.append(peek())
    d["k"] = obj.make(out)
    seen.append(peek())
    res = obj.child.make(1)
    seen.append(peek())
    for x in res:
        seen.append(peek())
        out.append(x)
    return seen


def line_events(fn, *args: object) -> list[tuple[str, int]]:
    """The 'line' events of *fn*'s own frame, as (event, line - first line): what coverage and pdb see."""
    events: list[tuple[str, int]] = []
    first = fn.__code__.co_firstlineno
    code = fn.__code__

    def local(frame, event, arg):
        if frame.f_code is code:
            events.append((event, frame.f_lineno - first))
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code is code else None

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(old)
    return events


def traced_shapes(obj: Counted, d: LoggingMap) -> int:
    out: list[object] = []
    out.append(obj.prop)
    d["k"] = out
    res = obj.make(out)
    for x in res:
        out.append(x)
    obj.p += 1
    y = d.copy()
    return len(y)


def yields_a_buffer(sent: list[object]) -> tuple[list[object], list[int], list[str]]:
    """A generator that yields one numpy array by name (the marking tells the runtime before each
    yield), is sent values, and is read between yields: what it yields, its lines, its locals."""
    import numpy as np

    def gen():
        buf = np.zeros(2)
        for i in range(3):
            got = yield buf
            sent.append(got)
            buf = buf + i  # a new array each turn: nothing to report

    g = gen()
    out = [next(g)]
    lines = [g.gi_frame.f_lineno - g.gi_code.co_firstlineno]
    names = sorted(g.gi_frame.f_locals)
    for value in ("a", "b"):
        out.append(g.send(value))
        lines.append(g.gi_frame.f_lineno - g.gi_code.co_firstlineno)
    g.close()
    return out, lines, names


class HashCounted:
    """An argument whose ``__hash__`` is counted: only the program's own hashing may run it."""

    hashes = 0

    def __init__(self, n: int) -> None:
        self.n = n

    def __hash__(self) -> int:
        HashCounted.hashes += 1
        return hash(self.n)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HashCounted) and other.n == self.n


def cached_lookups() -> tuple[int, list[int]]:
    """An ``lru_cache`` of the project's returning a dict (a judged value), called once to fill it and
    twice more to hit: how many times the argument was hashed, and what came back."""
    import functools

    @functools.lru_cache(maxsize=8)
    def settings(key: HashCounted) -> dict[str, int]:
        return {"n": key.n}

    HashCounted.hashes = 0
    key = HashCounted(3)
    got = [settings(key)["n"] for _ in range(3)]
    return HashCounted.hashes, got


def view_of_a_block(block: bytearray) -> tuple[weakref.ref[object], int]:
    """A view bound to a local name (marked: a library's array over someone else's memory), reduced to
    a number and dropped: plain Python frees it at the del, before the function returns."""
    import numpy as np

    view = np.frombuffer(block, dtype=np.uint8)
    ref = weakref.ref(view)
    total = int(view.sum())
    del view
    return ref, total


def yield_items(source: object, keys: list[object]):  # type: ignore[no-untyped-def]
    """``yield name[...]``: marked to hand an array's view to the runtime; any other object's item is
    read once, as written."""
    for key in keys:
        yield source[key]  # type: ignore[index]


def yield_views(n: int):  # type: ignore[no-untyped-def]
    import numpy as np

    buf = np.zeros(2)
    for i in range(n):
        buf[:] = i
        yield buf[:]


# -- NumPy's resize refuses an array anything else refers to, strongly or weakly ------------------


class Growable:
    """An amortised-growth buffer: its array is resized in place (``ndarray.resize``, refcheck on)."""

    def __init__(self) -> None:
        import numpy as np

        self.data = np.zeros(2)
        self.n = 0

    def push(self, value: float) -> None:
        if self.n == len(self.data):
            self.data.resize(2 * len(self.data))
        self.data[self.n] = value
        self.n += 1


def grown(count: int) -> list[float]:
    buffer = Growable()
    for i in range(count):
        buffer.push(float(i))
    return buffer.data[:buffer.n].tolist()


def resized_after_a_keep_let_go() -> tuple[int, int]:
    """An array kept in a list and taken out again: nothing refers to it but its name."""
    import numpy as np

    array = np.zeros(4)
    held = []
    held.append(array)
    held.pop()
    weak = weakref.getweakrefcount(array)
    array.resize(8)
    return weak, array.shape[0]


def resized_after_its_kept_views_let_go() -> list[int]:
    """Views of an array kept in a list, the list cleared (or dropped, or popped), then the array
    resized: nothing refers to the array but its name once the views are gone."""
    import numpy as np

    sizes = []
    for let_go in ("clear", "del", "pop", "loop"):
        array = np.arange(4.0)
        keep = []
        if let_go == "loop":
            for i in range(2):
                keep.append(array[i:])
                keep.clear()
        else:
            keep.append(array[1:])
            if let_go == "clear":
                keep.clear()
            elif let_go == "pop":
                keep.pop()
            else:
                del keep
        array.resize(8)
        sizes.append(array.size)
    return sizes


def keyed(src, key=None):
    """boltons' ``iterutils.redundant``: a name bound only on one branch, called only on that branch."""
    if key is not None:
        key_func = key
    out = []
    for i in src:
        k = key_func(i) if key else i
        out.append(k)
    return out


def keyed_or(src, key=None):
    if key is not None:
        key_func = key
    return [key is None or key_func(i) for i in src]


def first_or_called(items, make=None):
    if make is not None:
        build = make
    got = items and items[0] or build(items)
    return got


def return_prop(obj: Counted) -> object:
    """A function's ``return obj.prop``: the property runs once, its value is what is returned."""
    return obj.prop


def return_prop_in_a_tuple(obj: Counted, n: int) -> tuple[object, int]:
    return obj.prop, n


def return_buffer(holder: Counted) -> object:
    buf = holder.prop
    return buf


def return_one_branch(first: Counted, second: Counted, which: bool) -> object:
    """``return a.prop if c else b.prop``: only the branch taken reads its property, once."""
    return first.prop if which else second.prop


class Dropped:
    """Says when it dies (pyparsing's Forward warns from ``__del__``)."""

    deaths: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name

    def __del__(self) -> None:
        Dropped.deaths.append(self.name)


class Sequence:
    def __init__(self, parts: list[object]) -> None:
        self.parts = list(parts)  # a new list of the project's own objects


def drop_a_sequence(name: str) -> list[str]:
    """``base = Forward(); base = And([..., base, ...])`` and the function returns: the Forward dies
    with the And, before the caller looks."""
    part = Dropped(name)
    part = Sequence(["(", part, ")"])
    del part
    return list(Dropped.deaths)


# -- a ContextVar's name on something else ----------------------------------------------
# The rewriter marks ``x.var.get()`` wherever an attribute is named as a ContextVar is somewhere in the
# module (``Settings.var``); here it is a map that logs its gets, read inside expressions.
import contextvars  # noqa: E402


class Settings:
    var: contextvars.ContextVar[dict[str, int]] = contextvars.ContextVar("var")


class LoggingGets(dict):
    """A dict whose ``get`` is logged."""

    def get(self, key: object, default: object = None) -> object:  # type: ignore[override]
        LOG.append(f"get {key!r}")
        return super().get(key, default)


class Holder:
    def __init__(self) -> None:
        self.var = LoggingGets(k=1)


def read_through_get(holder: Holder) -> list[object]:
    out = [holder.var.get("k")]
    if holder.var.get("k") == 1:
        out.append(holder.var.get("missing", 2))
    return out + [Settings.var.get({"k": 3})["k"]]


def stamp(x: object, seen: list[object] = []) -> list[object]:  # noqa: B006 - the shape under probe
    seen.append(x)
    return seen


class Keeps:
    def __init__(self, items: list[object] = []) -> None:  # noqa: B006 - the shape under probe
        self.items = items


def grid(n: int) -> list[list[int]]:
    rows = [[0] * n] * n
    rows[0] = [1] * n  # a new row at one position: nothing shared is written
    return rows


def locals_seen_by_a_librarys_call(obj: Counted) -> list[str]:
    """A library call that reads its caller's locals while it runs (a traceback's ``capture_locals``,
    structlog's and rich's ``show_locals``), given a name: it sees the source's names only."""
    frame = sys._getframe()
    stack = traceback.StackSummary.extract(traceback.walk_stack(frame), limit=1, capture_locals=True)
    return sorted(stack[0].locals)


def locals_seen_through_a_chain(obj: Counted) -> list[str]:
    """The same call made through a chain of attributes (``self.lib.mod.f(x)``)."""
    frame = sys._getframe()
    holder = argparse.Namespace(tb=traceback)
    stack = holder.tb.StackSummary.extract(holder.tb.walk_stack(frame), limit=1, capture_locals=True)
    return sorted(stack[0].locals)


# -- what a fixture's teardown sees of the test's objects ---------------------------------------------


class Conn:
    """A resource a leak-check fixture counts: every instance alive is in ``LIVE_CONNS``."""

    def __init__(self) -> None:
        import numpy as np

        self.buf = np.zeros(4)
        self.stats = {"n": 0}
        LIVE_CONNS.add(self)

    def state_dict(self) -> dict:
        return {"buf": self.buf, "stats": dict(self.stats)}

    def load_state_dict(self, sd: dict) -> None:
        self.buf[...] = sd["buf"]


LIVE_CONNS: weakref.WeakSet[Conn] = weakref.WeakSet()


class Step:
    """A snapshot object (weakly referenceable) that a state method makes new each time."""

    def __init__(self, n: int, seen: list[int]) -> None:
        self.n, self.seen = n, seen


class Stepper:
    """A stateful object whose snapshots are new objects of the project's own, and an ordered
    dict for its other state method: the program may drop them, and they die at once."""

    def __init__(self) -> None:
        self.n = 0
        self.seen = [0]

    def state_dict(self) -> Step:
        return Step(self.n, list(self.seen))

    def load_state_dict(self, state: Step) -> None:
        self.n, self.seen = state.n, list(state.seen)

    def get_state(self) -> collections.OrderedDict:
        return collections.OrderedDict(n=self.n)


class Token:
    """Counts its live instances: a finaliser the program can see, inside a snapshot."""

    alive = 0

    def __init__(self) -> None:
        Token.alive += 1

    def __del__(self) -> None:
        Token.alive -= 1


class Cursor:
    """A node whose snapshot is a plain dict (no weak reference to it can exist) holding a new object
    of the project's own, and whose ``reset`` takes no state or one, copying what it keeps."""

    def __init__(self) -> None:
        self.i = 0
        self.buf = [1, 2]

    def get_state(self) -> dict:
        return {"i": self.i, "buf": list(self.buf), "token": Token()}

    def reset(self, state: dict | None = None) -> None:
        if state is None:
            self.i = 0
        else:
            self.i, self.buf = state["i"], list(state["buf"])


def mock_through_shapes(m: Any) -> tuple[list[Any], dict[str, Any], list[Any]]:
    """A ``MagicMock`` (it records every magic method called on it: ``__eq__``, ``__len__``, ``__iter__``,
    ``__bool__``) bound, kept, passed to library calls and called: only the program's calls are recorded."""
    import functools
    import itertools
    import threading

    kept: list[Any] = []
    kept.append(m)
    table = {"m": m}
    table["again"] = m
    pair = (m, [m])
    first, rest = pair
    out = [x for x in (m, first)]
    chained = list(itertools.chain([m], rest))
    functools.reduce(lambda a, b: a, [m, m])
    worker = threading.Thread(target=len, args=([m],))
    worker.start()
    worker.join()
    kept += [m]
    holder = MockHolder(m)
    holder.load_state_dict(holder.state_dict())
    holder.last = m
    yielded = list(_yields(m))
    del kept[1:]
    m(kept)
    m.send(table)
    m.publish(chained, key=table)
    return kept, table, out + yielded[:0]


def _yields(m: Any) -> Any:
    yield m
    yield [m]


class MockHolder:
    """A node whose state holds the mock it was given."""

    def __init__(self, m: Any) -> None:
        self.m, self.seen = m, [m]

    def state_dict(self) -> dict[str, Any]:
        return {"m": self.m, "seen": self.seen}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.m, self.seen = state["m"], list(state["seen"])
