"""Building a node class from its signature, for ``aliascheck check PACKAGE``.

Each parameter of ``__init__`` gets a short list of *choices*, simplest first,
from its type hint and default (as Hypothesis builds values from type hints):
a ``BaseNode`` gets aliascheck's own synthetic sources (:class:`Source`, then
:class:`NestedSource`, whose state is a dict holding a list and a counter; both
copy what they hand over and what they are given, so a finding is the node's
own), ``int`` small positive values, a callable :func:`identity`, a ``Sampler``
a small ``SequentialSampler`` or a seeded ``RandomSampler``, ``Optional`` None
first. A :class:`Recipe` builds the class from one index per parameter; index 0
everywhere is the simplest node, and Hypothesis shrinks indices towards it. A
parameter with no choice makes the class :class:`Unbuildable`, with the reason
and how to provide a factory (:func:`factory`).

The synthetic sources subclass torchdata's ``BaseNode``, so they exist only once
torchdata is importable: they are made on first use (``aliascheck.build.Source``
works for pickle and for the replay tests the sweep prints).
"""

from __future__ import annotations

import collections.abc as abc
import copy
import enum
import inspect
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

KEYS = ("a", "b")  # the keys of every str-keyed mapping in one construction, so that they agree
MAX_DEPTH = 2  # a parameter typed with a buildable class is built from its own signature, this deep
HOW_TO_FACTOR = ("write a factory: decorate a function returning one with @aliascheck.factory, "
                 "or list it as `aliascheck_factories = module:function` under [tool.aliascheck] in pyproject.toml")
FACTORY_MARK = "__aliascheck_factory__"
# The state protocols aliascheck check can drive (check.style_of), with __iter__/__next__: a node class.
PROTOCOLS = (("state_dict", "load_state_dict"), ("get_state", "reset"))


# -- factories the user provides ---------------------------------------------
def factory(fn: Any = None, *, of: type | None = None) -> Any:
    """Mark a function as the factory the sweep uses for a class it cannot (or should not) build.

    ``@aliascheck.factory`` takes the class from the return annotation;
    ``@aliascheck.factory(of=Reader)`` (or ``@aliascheck.factory(Reader)``) names it.
    The function is returned unchanged, with one attribute set.
    """
    if isinstance(fn, type):
        return factory(of=fn)
    if fn is None:
        return lambda f: factory(f, of=of)
    setattr(fn, FACTORY_MARK, of or True)
    return fn


def built_by(fn: Callable[..., Any]) -> type | None:
    """The class a factory builds: as marked, else its return annotation; None if it does not say."""
    marked = getattr(fn, FACTORY_MARK, None)
    if isinstance(marked, type):
        return marked
    try:
        hint = typing.get_type_hints(fn).get("return")
    except Exception:  # an unresolvable annotation: the caller builds one to see
        return None
    hint = typing.get_origin(hint) or hint
    return hint if isinstance(hint, type) else None


# -- values -----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Choice:
    """One value for a parameter: how to make it (fresh each time) and how to write it."""

    text: str  # as in the replay test: "Source(5)", "1", "None"
    make: Callable[[], Any]
    imports: tuple[str, ...] = ()  # lines the text needs
    default: bool = False  # the parameter's own default: left out of the call

    @classmethod
    def of(cls, value: Any) -> Choice:
        """An immutable (or freshly copied) literal value."""
        return cls(repr(value), lambda: copy.deepcopy(value))


class Unbuildable(Exception):
    """A parameter has no choice: the class is skipped with this reason."""


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    choices: tuple[Choice, ...]
    positional: bool = False  # positional-only


@dataclass(frozen=True, slots=True)
class Recipe:
    """How to build *cls*: one choice per parameter, picked by index (0: the simplest)."""

    cls: type
    params: tuple[Param, ...]
    nodes: frozenset[str] = field(default_factory=frozenset)  # parameters given synthetic sources

    @property
    def knobs(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if len(p.choices) > 1)

    @property
    def ranges(self) -> tuple[tuple[str, int, int], ...]:
        return tuple((p.name, 0, len(p.choices) - 1) for p in self.params if len(p.choices) > 1)

    def picks(self, indices: dict[str, int]) -> list[tuple[Param, Choice]]:
        return [(p, p.choices[min(indices.get(p.name, 0), len(p.choices) - 1)]) for p in self.params]

    def build(self, **indices: int) -> Any:
        args, kwargs = [], {}
        for param, choice in self.picks(indices):
            if param.positional:
                args.append(choice.make())
            elif not choice.default:
                kwargs[param.name] = choice.make()
        return self.cls(*args, **kwargs)

    def call(self, indices: dict[str, int]) -> str:
        parts = [c.text if p.positional else f"{p.name}={c.text}" for p, c in self.picks(indices)
                 if p.positional or not c.default]
        return f"{self.cls.__qualname__}({', '.join(parts)})"

    def render(self, indices: dict[str, int]) -> tuple[list[str], str]:
        """The import lines and the call expression of a replay test."""
        lines = [f"from {self.cls.__module__} import {self.cls.__qualname__.split('.')[0]}"]
        for _, choice in self.picks(indices):
            lines += [line for line in choice.imports if line not in lines]
        return lines, self.call(indices)

    def variants(self) -> list[dict[str, int]]:
        """The argument sets a default sweep runs: the simplest, then each node parameter's nested source."""
        nested = {name: 1 for name in self.nodes if len(self._param(name).choices) > 1}
        return [{}, nested] if nested else [{}]

    def _param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


def recipe(cls: type, depth: int = 0) -> Recipe:
    """The choices for every parameter of ``cls.__init__``; :class:`Unbuildable` names the first without."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError) as exc:
        raise Unbuildable(f"cannot read the signature of {cls.__qualname__}: {exc}") from None
    hints = _hints(cls)
    params, nodes = [], set()
    for name, p in signature.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        hint = hints.get(name, p.annotation)
        has_default = p.default is not p.empty
        try:
            choices = _for_parameter(hint, has_default, p.default, depth)
        except Unbuildable as exc:
            written = f"{name}: {_typename(hint)}" if hint is not p.empty else name
            raise Unbuildable(f"cannot build a value for `{written}` ({exc}); {HOW_TO_FACTOR}") from None
        if any(c.text.startswith(("Source(", "NestedSource(", "{'a': Source", "[Source")) for c in choices):
            nodes.add(name)
        params.append(Param(name, tuple(choices), p.kind == p.POSITIONAL_ONLY))
    return Recipe(cls, tuple(params), frozenset(nodes))


def _hints(cls: type) -> dict[str, Any]:
    init = cls.__init__  # type: ignore[misc]
    try:
        return typing.get_type_hints(init)
    except Exception:  # a forward reference that does not resolve: take the raw annotations
        return dict(getattr(init, "__annotations__", {}))


def _for_parameter(hint: Any, has_default: bool, default: Any, depth: int) -> list[Choice]:
    if not has_default:
        return _for_type(hint, depth)
    first = Choice(repr(default), lambda: default, default=True)
    if default is None:  # Optional[X] = None: None first, then X if it can be built
        try:
            return [first, *_for_type(_without_none(hint), depth)[:2]]
        except Unbuildable:
            return [first]
    if type(default) is int and _plain(hint) is int:  # small positive values after the default
        return [first, *(Choice.of(n) for n in (1, 2, 3) if n != default)][:3]
    return [first]  # a bool, a string, a mode: the author's default only (in_order=False is no bug)


def _for_type(hint: Any, depth: int) -> list[Choice]:
    if hint is inspect.Parameter.empty or hint is Any or isinstance(hint, typing.TypeVar):
        raise Unbuildable("no type hint and no default")
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        if type(None) in args:
            return [Choice.of(None), *_for_type(_without_none(hint), depth)[:2]]
        out = [c for a in args for c in _try(a, depth)]
        if not out:
            raise Unbuildable(f"no member of {_typename(hint)} can be built")
        return out
    if origin is typing.Literal:
        return [Choice.of(a) for a in args]
    cls = origin or hint
    if not isinstance(cls, type):
        raise Unbuildable(f"no strategy for {_typename(hint)}")
    for test, make in _BY_TYPE:
        if test(cls):
            return make(cls, args, depth)
    if issubclass(cls, enum.Enum):
        line = f"from {cls.__module__} import {cls.__qualname__}"
        return [Choice(f"{cls.__qualname__}.{m.name}", _constant(m), (line,)) for m in cls]
    return _nested(cls, depth)


def _try(hint: Any, depth: int) -> list[Choice]:
    try:
        return _for_type(hint, depth)
    except Unbuildable:
        return []


def _nested(cls: type, depth: int) -> list[Choice]:
    """A concrete node class is built from its own signature (``loader: Loader[T]``), to a small depth."""
    if depth >= MAX_DEPTH or inspect.isabstract(cls) or not is_node_class(cls):
        raise Unbuildable(f"no strategy for {_typename(cls)}")
    inner = recipe(cls, depth + 1)
    lines, text = inner.render({})
    return [Choice(text, inner.build, tuple(lines))]


def is_node_class(cls: type) -> bool:
    """A torchdata ``BaseNode``, or a class with a state protocol check can drive and iteration."""
    base = _base_node()
    if base is not None and issubclass(cls, base):
        return True
    if getattr(cls, "_is_protocol", False):
        return False
    iterates = any(callable(getattr(cls, m, None)) for m in ("__iter__", "__next__"))
    return iterates and any(all(isinstance(getattr(cls, m, None), types.FunctionType) for m in pair)
                            for pair in PROTOCOLS)


# -- per type ---------------------------------------------------------------
def _is_node(cls: type) -> bool:
    base = _base_node()
    return base is not None and issubclass(cls, base)


def _nodes(cls: type, args: tuple[Any, ...], depth: int) -> list[Choice]:
    base = _base_node()
    if cls is not base and not inspect.isabstract(cls):  # a concrete node class: build that one
        return _nested(cls, depth)
    lists = bool(args) and _plain(args[0]) in (list, tuple, abc.Sequence, abc.MutableSequence)
    return [_source("Source", 5, lists), _source("NestedSource", 4, lists)]


def _source(name: str, n: int, lists: bool) -> Choice:
    text = f"{name}({n}{', lists=True' if lists else ''})"
    return Choice(text, lambda: getattr(sys.modules[__name__], name)(n, lists=lists),
                  (f"from aliascheck.build import {name}",))


def _mappings(cls: type, args: tuple[Any, ...], depth: int) -> list[Choice]:
    key, value = (args + (Any, Any))[:2]
    if key not in (str, Any) and not isinstance(key, typing.TypeVar):
        raise Unbuildable(f"no strategy for keys of type {_typename(key)}")
    values = _for_type(value, depth)
    if values[0].text.startswith("Source("):  # a dataset per key, of different lengths (one runs out first)
        pairs = [[_source(n, length, False) for length in (3, 5)] for n in ("Source", "NestedSource")]
    else:
        pairs = [[c, c] for c in values[:2]]
    return [_collection(dict(zip(KEYS, pair, strict=True))) for pair in pairs]


def _collection(parts: dict[str, Choice] | list[Choice]) -> Choice:
    if isinstance(parts, dict):
        text = "{" + ", ".join(f"{k!r}: {c.text}" for k, c in parts.items()) + "}"
        make: Callable[[], Any] = lambda: {k: c.make() for k, c in parts.items()}  # noqa: E731
        chosen = list(parts.values())
    else:
        text = "[" + ", ".join(c.text for c in parts) + "]"
        make, chosen = (lambda: [c.make() for c in parts]), parts
    return Choice(text, make, tuple(dict.fromkeys(line for c in chosen for line in c.imports)))


def _sequences(cls: type, args: tuple[Any, ...], depth: int) -> list[Choice]:
    if cls is tuple:
        if not args or args[-1] is Ellipsis:
            return _sequences(list, args[:1], depth)
        parts = [_for_type(a, depth)[0] for a in args]
        return [Choice(f"({', '.join(c.text for c in parts)},)", lambda: tuple(c.make() for c in parts))]
    values = _for_type(args[0] if args else int, depth)
    if values[0].text.startswith("Source("):
        return [_collection([_source(n, length, False) for length in (3, 5)]) for n in ("Source", "NestedSource")]
    return [_collection([values[0], values[-1]])]


def _iterables(cls: type, args: tuple[Any, ...], depth: int) -> list[Choice]:
    if args and not isinstance(args[0], typing.TypeVar) and args[0] not in (int, Any):
        raise Unbuildable(f"no strategy for an iterable of {_typename(args[0])}")
    if cls in (abc.Iterator, abc.Generator):
        return [Choice(f"iter(range({n}))", _maker(lambda n=n: iter(range(n)))) for n in (5, 3)]
    return [Choice(f"list(range({n}))", _maker(lambda n=n: list(range(n)))) for n in (5, 3)]


def _callables(cls: type, args: tuple[Any, ...], depth: int) -> list[Choice]:
    params, ret = (args[0], args[1]) if len(args) == 2 else (Ellipsis, Any)
    if params is not Ellipsis and len(params) != 1:
        raise Unbuildable(f"no strategy for a callable taking {len(params)} arguments")
    out = [Choice("identity", lambda: identity, ("from aliascheck.build import identity",))]
    if params is not Ellipsis and params[0] is int and ret is int:
        out.append(Choice("plus_one", lambda: plus_one, ("from aliascheck.build import plus_one",)))
    return out


def _samplers(cls: type, args: tuple[Any, ...], depth: int) -> list[Choice]:
    import torch
    from torch.utils.data import RandomSampler, SequentialSampler

    imports = ("import torch", "from torch.utils.data import RandomSampler, SequentialSampler")
    return [
        Choice("SequentialSampler(range(5))", lambda: SequentialSampler(range(5)), imports),
        # Seeded, one generator per node: a fresh node draws the same permutation (resume needs that).
        Choice("RandomSampler(range(5), generator=torch.Generator().manual_seed(0))",
               lambda: RandomSampler(range(5), generator=torch.Generator().manual_seed(0)), imports),
    ]


def _is_sampler(cls: type) -> bool:
    torch_data = sys.modules.get("torch.utils.data")
    return torch_data is not None and isinstance(cls, type) and issubclass(cls, torch_data.Sampler)


def _scalars(cls: type, args: tuple[Any, ...], depth: int) -> list[Choice]:
    values: dict[type, tuple[Any, ...]] = {bool: (False, True), int: (1, 2, 3), float: (1.0, 0.5)}
    return [Choice.of(v) for v in values[cls]]


_MAPPINGS = (dict, abc.Mapping, abc.MutableMapping)
_SEQUENCES = (list, tuple, abc.Sequence, abc.MutableSequence)
_BY_TYPE: tuple[tuple[Callable[[type], bool], Callable[[type, tuple[Any, ...], int], list[Choice]]], ...] = (
    (lambda c: c in (bool, int, float), _scalars),
    (_is_node, _nodes),
    (lambda c: c in _MAPPINGS, _mappings),
    (lambda c: c in _SEQUENCES, _sequences),
    (lambda c: c in (abc.Iterable, abc.Iterator, abc.Generator), _iterables),
    (lambda c: c is abc.Callable, _callables),
    (_is_sampler, _samplers),
)


# -- helpers ------------------------------------------------------------------
def _plain(hint: Any) -> Any:
    return typing.get_origin(hint) or hint


def _without_none(hint: Any) -> Any:
    args = tuple(a for a in typing.get_args(hint) if a is not type(None))
    if not args:
        return hint
    return args[0] if len(args) == 1 else typing.Union[args]  # noqa: UP007 (a runtime union of a tuple)


def _typename(hint: Any) -> str:
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__qualname__
    return str(hint).replace("typing.", "")


def _base_node() -> type | None:
    nodes = sys.modules.get("torchdata.nodes")
    return getattr(nodes, "BaseNode", None)


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def _maker(fn: Callable[..., Any]) -> Callable[[], Any]:
    return fn


def identity(x: Any) -> Any:
    """The map function a sweep gives a node: items pass unchanged."""
    return x


def plus_one(x: int) -> int:
    return x + 1


# -- the synthetic sources ------------------------------------------------------
def _make_sources() -> dict[str, type]:
    from torchdata.nodes import BaseNode

    class Source(BaseNode):  # type: ignore[type-arg]
        """A well-behaved source: yields 0..n-1 (or [i, i]); copies what it hands over and is given."""

        def __init__(self, n: int = 5, lists: bool = False) -> None:
            super().__init__()
            self.n, self.lists = n, lists

        def reset(self, initial_state: dict[str, Any] | None = None) -> None:
            super().reset(initial_state)
            self.index = 0 if initial_state is None else int(initial_state["index"])

        def next(self) -> Any:
            if self.index >= self.n:
                raise StopIteration
            self.index += 1
            return [self.index - 1] * 2 if self.lists else self.index - 1

        def get_state(self) -> dict[str, Any]:
            return {"index": self.index}

    class NestedSource(BaseNode):  # type: ignore[type-arg]
        """A well-behaved source whose state nests: a dict holding a list and a counter, deep-copied both ways."""

        def __init__(self, n: int = 4, lists: bool = False) -> None:
            super().__init__()
            self.n, self.lists = n, lists

        def reset(self, initial_state: dict[str, Any] | None = None) -> None:
            super().reset(initial_state)
            fresh: dict[str, Any] = {"pos": {"seen": [], "count": 0}}
            self.state = copy.deepcopy(initial_state) if initial_state is not None else fresh

        def next(self) -> Any:
            pos: dict[str, Any] = self.state["pos"]
            if pos["count"] >= self.n:
                raise StopIteration
            item = pos["count"] * 10
            pos["seen"].append(item)
            pos["count"] += 1
            return [item] * 2 if self.lists else item

        def get_state(self) -> dict[str, Any]:
            return copy.deepcopy(self.state)

    for cls in (Source, NestedSource):
        cls.__module__, cls.__qualname__ = __name__, cls.__name__
    return {"Source": Source, "NestedSource": NestedSource}


def __getattr__(name: str) -> Any:
    if name in ("Source", "NestedSource"):
        globals().update(_make_sources())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Also Source and NestedSource, made on first use (module __getattr__).
__all__ = ["Choice", "Recipe", "Unbuildable", "factory", "identity", "recipe"]
