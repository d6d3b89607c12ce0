"""Frozen records: what was handed over, and what was found. The JSON report's schema.

Each finding kind has a stable slug, explained in README's "Findings" section:

- ``mutation``: a handed-over snapshot, still held by someone, changed afterwards.
- ``alias``: a handed-over snapshot shares mutable objects with its owner's live state.
- ``class-reset``: ``cloudpickle.loads`` overwrote an existing class's attributes.
- ``unverifiable``: part of a snapshot could not be fingerprinted, so was not checked.
- ``fresh-class``: a fresh process rebuilds a pickled class differently from the live one.
- ``resume``: a node restored from a snapshot did not continue the original run
  (``aliascheck check``'s resume-equivalence check).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

KINDS = ("mutation", "alias", "class-reset", "unverifiable", "fresh-class", "resume")
CHECKS = (
    "handover", "delivery", "reentry", "teardown", "harness", "alias-probe", "loads", "fresh-process", "resume",
)

HINTS = {
    "mutation": "return a copy from get_state()/state_dict() (or copy where you keep it), not live state",
    "alias": "the snapshot shares live objects with its owner: return a copy from get_state()",
    "class-reset": "load with aliascheck.fixes.cloudpickle.loads(data, existing_classes='keep')",
    "unverifiable": "register a fingerprint handler for this type (aliascheck.register_handler)",
    "resume": "make reset(state) restore every part of the position get_state() describes",
}


@dataclass(frozen=True, slots=True)
class Handover:
    """One moment at which state left its owner."""

    owner: str  # module.Qualname of the owner's type
    label: str  # a readable name for the owner instance, e.g. "MutableSource#2"
    kind: str  # state_dict, reset, load_state_dict, watch, cloudpickle.dumps, ...
    site: str  # file:line of the innermost frame outside aliascheck
    stack: tuple[str, ...] = ()
    thread: str = ""
    test: str | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    owner: str
    path: str
    before: str
    after: str
    handover: str
    check: str
    test: str | None = None
    label: str = ""
    severity: str = "error"  # error | warning | info
    hint: str = ""
    stack: tuple[str, ...] = field(default=())
    more: int = 0  # changed paths of the same snapshot left out of the report
    thread: str = ""  # the thread the handover happened in

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stack"] = list(self.stack)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        data = dict(data)
        data["stack"] = tuple(data.get("stack", ()))
        return cls(**data)
