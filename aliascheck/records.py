"""The ledger's data: its settings, one record per handover, and its counters."""

from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .fingerprint import Fingerprint
from .sites import Where


@dataclass(frozen=True, slots=True)
class Settings:
    probe_aliases: bool = True
    ignore: tuple[str, ...] = ()
    strict: bool = False


class Record:
    """One handover: who gave and who keeps it, its value's fingerprint then, where (a raw capture),
    and what may judge it (``always``: whoever holds it; ``adopter``/``adopted``: a node's load)."""

    __slots__ = ("owner_name", "label", "kind", "where", "thread", "test", "obj", "fp", "owner", "owner_type",
                 "nested", "always", "flagged", "aliases", "shares", "adopter", "adopted", "adopted_parts")

    def __init__(self, owner_name: str, label: str, kind: str, where: Where, thread: str, test: str | None,
                 obj: Any, fp: Fingerprint, owner: Any, always: bool) -> None:
        self.owner_name = owner_name  # module.Qualname of the owner's type (or the name a watch gave)
        self.label = label  # a readable name for the owner instance, e.g. "MutableSource#2"
        self.kind = kind  # state_dict, reset, load_state_dict, watch, ...
        self.where = where  # formatted only when reported
        self.thread = thread
        self.test = test
        self.obj = obj
        self.fp = fp
        self.owner = weak(owner)
        self.owner_type: type | None = None if isinstance(owner, str) else type(owner)
        self.nested: list[tuple[int, str, str, type]] = []  # (id, owner name, label, type) of inner state_dicts
        self.always = always  # judged whoever holds it (watched; a snapshot loaded into another node)
        self.flagged = False
        self.aliases: list[tuple[str, str]] = []  # what the probe found at this handover: warned about if unchanged
        self.shares: list[tuple[str, str]] = []  # (snapshot path, live path) of its owner type: names a change
        self.adopter: Any = None  # a weak reference to another node this very snapshot was loaded into
        # (snapshot path, live path) of what the loading node kept when its load returned: judged even
        # after the node let go of it (``self.buf = self.buf[n:]``), since it changed while held.
        self.adopted: list[tuple[str, str]] = []
        self.adopted_parts: set[int] = set()  # ids of the objects at those paths: is it still holding them?


def weak(obj: Any) -> Any:
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: None


@dataclass
class Stats:
    handovers: int = 0
    checked: int = 0
    flagged: int = 0
    unverifiable: int = 0
    owners: Counter = field(default_factory=Counter)

    def merge(self, other: Stats) -> None:
        self.handovers += other.handovers
        self.checked += other.checked
        self.flagged += other.flagged
        self.unverifiable += other.unverifiable
        self.owners.update(other.owners)
