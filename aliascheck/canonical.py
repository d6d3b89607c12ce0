"""A canonical digest of a shadow tree: the same for equal values in any process.

The fingerprint's own digest hashes a pickle stream, which follows dict
insertion order, a set's hash order (PYTHONHASHSEED for strings) and which equal
strings were one object. This digest follows none of them: mappings and sets
are hashed as sorted multisets of their entries' digests, and sharing is counted
only between mutable parts, numbered in canonical order.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import xxhash

from .shadow import BufferToken, GlobalRef, Opaque, Stub, Truncated

MUTABLE = (list, dict, set, bytearray, Stub, BufferToken)


# Levels fed before a part is digested by its type alone: a linked chain in a shadow (a compiled-cache key
# holding a dialect) must not reach the recursion limit, in the program's frames above this.
MAX_DEPTH = 100


class _Canon:
    def __init__(self) -> None:
        self.shared: dict[int, int] = {}
        self.depth = 0

    def digest(self, node: Any) -> bytes:
        h = xxhash.xxh3_128()
        self.feed(h, node)
        return h.digest()

    def feed(self, h: Any, node: Any) -> None:
        if isinstance(node, MUTABLE) and not isinstance(node, GlobalRef):
            key = id(node)
            if key in self.shared:
                h.update(b"R" + struct.pack("<q", self.shared[key]))
                return
            self.shared[key] = len(self.shared)
        h.update(type(node).__name__.encode() + b"\0")
        if self.depth >= MAX_DEPTH:
            h.update(b"...")
            return
        self.depth += 1
        try:
            self._feed_value(h, node)
        finally:
            self.depth -= 1

    def _feed_value(self, h: Any, node: Any) -> None:
        if node is None or isinstance(node, bool):
            h.update(repr(node).encode())
        elif isinstance(node, float):
            h.update(b"nan" if math.isnan(node) else struct.pack("<d", node))
        elif isinstance(node, (int, complex)):
            h.update(repr(node).encode())
        elif isinstance(node, str):
            h.update(node.encode("utf-8", "surrogatepass"))
        elif isinstance(node, (bytes, bytearray)):
            h.update(node)
        elif isinstance(node, (list, tuple)):
            self._sequence(h, node)
        elif isinstance(node, dict):
            self._mapping(h, list(node.items()))
        elif isinstance(node, (set, frozenset)):
            h.update(b"".join(sorted(key_digest(x) for x in node)))
        elif isinstance(node, GlobalRef):
            h.update(node._qualname.encode())
        elif isinstance(node, Stub):
            h.update(type(node)._qualname.encode() + b"\0")
            for part in (list(node.args), node.state, node.items):
                self.feed(h, part)
            self._mapping(h, node.dictitems)
        elif isinstance(node, (BufferToken, Opaque, Truncated)):
            h.update(repr(node).encode())
        else:  # pragma: no cover - shadows hold nothing else
            h.update(repr(node).encode())

    def _sequence(self, h: Any, seq: Any) -> None:
        h.update(struct.pack("<q", len(seq)))
        for item in seq:
            self.feed(h, item)

    def _mapping(self, h: Any, items: list[tuple[Any, Any]]) -> None:
        h.update(struct.pack("<q", len(items)))
        for _, k, v in sorted(((key_digest(k), k, v) for k, v in items), key=lambda e: e[0]):
            h.update(key_digest(k))
            self.feed(h, v)


def key_digest(node: Any) -> bytes:
    """A digest of *node* alone, for matching dict keys and set elements."""
    return _Canon().digest(node)


def canonical_digest(node: Any) -> str:
    return _Canon().digest(node).hex()
