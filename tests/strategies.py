"""Hypothesis strategies for nested states, and the mutable places inside them."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import numpy as np
from hypothesis import strategies as st


@dataclasses.dataclass
class Record:
    name: str
    payload: Any


class Slotted:
    __slots__ = ("left", "right")

    def __init__(self, left: Any, right: Any) -> None:
        self.left = left
        self.right = right

    def __eq__(self, other: object) -> bool:  # for round-trip checks in tests only
        return type(other) is Slotted and (self.left, self.right) == (other.left, other.right)


class Plain:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.complex_numbers(allow_nan=False),
    st.text(max_size=8),
    st.binary(max_size=8),
)
keys = st.text(max_size=6)


def arrays() -> st.SearchStrategy[Any]:
    shapes = st.lists(st.integers(1, 4), min_size=0, max_size=2)
    return shapes.flatmap(
        lambda shape: st.lists(st.integers(-100, 100), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))
        .map(lambda vals: np.array(vals, dtype=np.int64).reshape(shape))
    )


def tensors() -> st.SearchStrategy[Any]:
    import torch

    return arrays().map(lambda a: torch.from_numpy(a.astype(np.float32)))


def states(with_buffers: bool = True, with_torch: bool = False, with_opaque: bool = False) -> Any:
    leaves = [atoms]
    if with_buffers:
        leaves.append(arrays())
    if with_torch:
        leaves.append(tensors())
    if with_opaque:
        leaves.append(st.builds(threading.Lock))
    base = st.one_of(*leaves)
    return st.recursive(
        base,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.tuples(inner, inner),
            st.dictionaries(keys, inner, max_size=4),
            st.frozensets(st.text(max_size=4), max_size=4),
            st.sets(st.text(max_size=4), max_size=4),
            st.builds(Record, name=st.text(max_size=4), payload=inner),
            st.builds(Slotted, inner, inner),
            st.builds(lambda a, b: Plain(a=a, b=b), inner, inner),
        ),
        max_leaves=12,
    )


def mutable_places(obj: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, container) for every list, dict, set, object and buffer reachable in *obj*."""
    out: list[tuple[str, Any]] = []
    if isinstance(obj, (list, dict, set, Record, Slotted, Plain, np.ndarray)) or _is_tensor(obj):
        out.append((path, obj))
    if isinstance(obj, (list, tuple)):
        for i, x in enumerate(obj):
            out += mutable_places(x, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out += mutable_places(v, f"{path}[{k!r}]")
    elif isinstance(obj, (Record, Plain)):
        for k, v in vars(obj).items():
            out += mutable_places(v, f"{path}.{k}")
    elif isinstance(obj, Slotted):
        out += mutable_places(obj.left, f"{path}.left") + mutable_places(obj.right, f"{path}.right")
    return out


def _is_tensor(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


MARK = "\x00mutated\x00"


def mutate(container: Any, choice: int) -> str:
    """Apply one mutation to *container*; returns the path suffix the diff must name."""
    if isinstance(container, list):
        if container and choice % 3 == 0:
            container[-1] = MARK
            return f"[{len(container) - 1}]"
        if container and choice % 3 == 1:
            container.pop()
            return f"[{len(container)}]"
        container.append(MARK)
        return f"[{len(container) - 1}]"
    if isinstance(container, dict):
        if container and choice % 2 == 0:
            key = sorted(container)[choice % len(container)]
            if choice % 4 == 0:
                del container[key]
            else:
                container[key] = MARK
            return f"[{key!r}]"
        container[MARK] = 1
        return f"[{MARK!r}]"
    if isinstance(container, set):
        container.add(MARK)
        return ""
    if isinstance(container, (Record, Plain)):
        name = sorted(vars(container))[choice % len(vars(container))]
        setattr(container, name, MARK)
        return f".{name}"
    if isinstance(container, Slotted):
        name = ("left", "right")[choice % 2]
        setattr(container, name, MARK)
        return f".{name}"
    flat = container.reshape(-1)
    if flat.shape[0] == 0:
        return "<empty>"
    flat[choice % flat.shape[0]] += 1
    return ""
