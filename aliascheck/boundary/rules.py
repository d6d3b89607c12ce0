"""The boundary's rules: whether a value the project kept, or a library kept, changed in a way that is a finding.

In docs/judged.md's names: *Kept* (library -> project, :func:`kept`), *Handed* (project -> library,
:func:`handed`, :func:`passed_again`, and :func:`setting`: a value a library keeps as a live setting is
not a message), *Copied* (:func:`copied`), and what is not a change at all (:func:`materialised`: a
``cached_property`` filled by a read). :mod:`aliascheck.judge` re-exports the four rules, so every rule
is reached from there.

They decide on facts the runtime's per-test state answers (*at*: :class:`aliascheck.boundary.runtime`'s
``_Test``: the sites flagged, keeps per site, a value's changes, whether its keeper holds it, whether
the project wrote it). This module imports neither the runtime nor the rewriter, and reads a user's
objects only at C level: ``type()``, identity, an instance's own ``__dict__`` through
``object.__getattribute__``, the collector's referents. No property, ``__getattr__`` or ``__eq__`` runs.
"""
from __future__ import annotations

import gc
import re
import sys
import types
from collections.abc import Callable
from typing import Any

from ..diff import Change, node_at
from ..kinds import KEPT_AGAIN
from ..records import Record
from ..shadow import GlobalRef, Stub


# -- Kept (library -> project) --------------------------------------------------------------
def kept(rec: Record, check: str, at: Any, collect: Callable[[Callable[[], bool]], bool] | None = None) -> list[Change]:
    """*Kept*: a value the project keeps is a finding when it changed after the keep, while the keeper
    still holds it, and the project did not write it; a name or an attribute bound once to a live
    object (not a view) is a handle, not judged. Returns the changes to report (the record flagged).

    *at*: the boundary's facts for the test (:mod:`aliascheck.boundary.runtime`'s ``_Test``: the sites
    flagged, keeps per site, a value's changes, whether its keeper holds it, whether the project
    wrote it). *collect*: asked whether the keeper still holds it once garbage is collected (teardown:
    a dead local list in a reference cycle keeps nothing), only for a keeper that holds it now.
    """
    keep = rec.adopter
    if rec.flagged or keep.site in at.flagged:
        return []
    if keep.how in ("name", "attr") and not at.view(rec.obj) and at.counts.get(keep.site, 0) < 2:
        return []  # a handle bound once
    # The cheap facts first, the diff last: only a finding needs its paths.
    now = at.changed(rec)
    if now is None:
        return []
    # The project's write is its intent, for what it keeps once. The very object kept again at one line
    # while the keeper still holds it from before (``history.append(tracker.metrics)`` each step, the
    # tracker writing the dict in between) is a history of one object: every entry shows the last state,
    # whoever wrote it (rule *Who wrote it, for whom*).
    if at.by_project(rec, keep.epoch) and not (check == KEPT_AGAIN and at.held_again(rec)):
        rec.fp = now  # the project's own change: the new value is the kept one
        return []
    if keep.how == "name" and check == "next keep":
        # A name held it till now. Bound again, it let go of the value: if nobody else holds it either, no
        # one could read the change (a window onto a slot that a producer refills after the consumer's
        # acknowledgement); another name or a container still holding it (``prev = frame``) could, and
        # so can the name itself when its new value holds the same live objects again (``best =
        # list(model.parameters())`` at each improvement: a history of live state, not a window).
        if at.released(rec) and not at.same_parts_again(rec):
            return []
    elif not at.held(rec) or (collect is not None and not collect(lambda: at.held(rec))):
        # Not held even before garbage is collected (a collection frees, it never holds): no collection.
        return []
    changes = at.changes(rec, now)
    if not changes:
        return []
    rec.flagged = True
    at.flagged.add(keep.site)
    return changes


# -- Handed (project -> library) ------------------------------------------------------------
def handed(rec: Record, held: bool, own: bool) -> bool:
    """*Handed*: a value a library call kept is a finding when the project then writes into it through
    its own reference (*own*; not the library's handle: ``opt.param_groups[0]["lr"] = 0.01`` is the
    documented use) while the library still holds it (*held*). True: report it (the record flagged)."""
    if rec.flagged or not held or not own:
        return False
    rec.flagged = True
    return True


def passed_again(rec: Record, changes: list[Change], at: Any) -> bool:
    """*Handed*: a kept dict or list passed to a call again after the library changed it (``SGD(groups)``
    twice with a scheduler in between) is a finding; a change the project wrote itself is its intent.
    True: report *changes* (the record flagged)."""
    if not changes or at.by_project(rec, rec.adopter[2]):
        return False
    rec.flagged = True
    return True


# -- Copied ---------------------------------------------------------------------------------
def copied(rec: Record, flagged: set[int], copy: Any, source: Any) -> bool:
    """*Copied*: the project writing into a mutable part a shallow copy (``x.copy()``, ``copy.copy(x)``,
    ``np.copy(x)``) shares with its source is a finding while both the copy and the source are still
    held. True: report it (the record flagged, and noted in *flagged*)."""
    if rec.flagged or id(rec) in flagged:
        return False
    # Held by someone besides the caller's name, this parameter and getrefcount's argument: both in use.
    if sys.getrefcount(copy) <= 3 or sys.getrefcount(source) <= 3:
        return False
    rec.flagged = True
    flagged.add(id(rec))
    return True


# -- What is not a change, or not a message -------------------------------------------------
_LAST_ATTRIBUTE = re.compile(r"^(.*)\.([A-Za-z_][A-Za-z_0-9]*)$")


def materialised(root: Any, change: Change, after: Any = None) -> bool:
    """An attribute filled in by a read, nothing changed:

    - one that appeared where the class has a non-data descriptor of that name (``cached_property``,
      a library's own ``cachedproperty``);
    - a private one (``_schema``) that went from ``None`` or missing to a value where the class has a
      property of the public name (``schema``): the lazy-initialisation idiom, whose getter fills it
      at the first read (marshmallow's ``Nested.schema``);
    - a private one (``_width``) that appeared on an instance whose class declares it ``None``
      (``_width = None`` in the class body): a value computed at its first use and kept (lark's
      ``PatternRE._get_width``).

    A value replaced by another is a change. *after* (the value's fingerprint now) tells the
    attribute's owner where the live value's path cannot be followed at C level (a dict whose keys
    are a ``str`` subclass's instances, lark's ``Token``): the class its shadow names.
    """
    if change.before not in ("<missing>", "None"):
        return False
    match = _LAST_ATTRIBUTE.match(change.path)
    if match is None:
        return False
    owner = at_path(root, match.group(1))
    kind: Any = type(owner) if owner is not None else None
    if kind is None and after is not None and after.detail is not None:
        kind = _class_of(node_at(after.shadow(), match.group(1)))
    if kind is None:
        return False
    name = match.group(2)
    if change.before == "<missing>" and (found := _class_entry(kind, name)) is not None:
        entry = type(found)
        return any("__get__" in CLASS_DICT(k) for k in MRO(entry)) and not any(
            "__set__" in CLASS_DICT(k) for k in MRO(entry))
    if change.before == "<missing>" and name.startswith("_") and not name.startswith("__") \
            and _declared_none(kind, name):
        return True
    public = name[1:]
    return (name.startswith("_") and public.isidentifier() and not public.startswith("_")
            and type(_class_entry(kind, public)) is property)


def _class_of(node: Any) -> type | None:
    """The class a shadow node stands for an instance of, found in its module's namespace as loaded
    (nothing imported, no attribute of the program's run); None when not found."""
    if not isinstance(node, Stub) or isinstance(node, GlobalRef):
        return None
    qualname = type(node)._qualname
    parts = qualname.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if type(module) is types.ModuleType:
            found: Any = module
            for name in parts[cut:]:
                space = vars(found) if type(found) is types.ModuleType else (
                    CLASS_DICT(found) if isinstance(found, type) else {})
                found = space.get(name)
            return found if isinstance(found, type) else None
    return None


def _declared_none(kind: type, name: str) -> bool:
    """The first class along *kind*'s MRO that has *name* binds it to None."""
    for klass in MRO(kind):
        space = CLASS_DICT(klass)
        if name in space:
            return space[name] is None
    return False


def _class_entry(kind: type, name: str) -> Any:
    """The entry for *name* along *kind*'s MRO, read as type itself reads them: no metaclass's code runs."""
    for klass in MRO(kind):
        found = CLASS_DICT(klass).get(name)
        if found is not None:
            return found
    return None


# A class's MRO and own dict, read as type itself reads them: a metaclass's override is not run.
MRO = type.__dict__["__mro__"].__get__
CLASS_DICT = type.__dict__["__dict__"].__get__


def setting(obj: Any) -> bool:
    """Kept as a setting the library reads live, not as a record of the past: every container that
    holds *obj* (aliascheck's own, running frames and module namespaces aside) is a dict that has it
    under a name, and there is one (an
    optimizer's ``param_groups[0]["lr"]`` and ``defaults["lr"]``, an attribute), none a list, a tuple,
    a queue or a buffer (a history, a log record's args, a batch)."""
    named = 0
    namespaces = {id(vars(m)) for m in list(sys.modules.values()) if type(m) is types.ModuleType}
    for ref in gc.get_referrers(obj):  # a plain loop: a comprehension's cell would hold obj itself
        if (type(ref) is types.FrameType or id(ref) in namespaces
                or (type(ref).__module__ or "").startswith("aliascheck")):
            continue  # the project's own names, and aliascheck's records: not the library's hold
        if type(ref) is not dict:
            return False
        for key, value in ref.items():
            if value is obj and type(key) is str:
                named += 1
                break
        else:
            return False
    return named > 0


def at_path(root: Any, path: str) -> Any:
    """The object at a diff path like ``['params'][0]`` or ``[0].child`` (None when it cannot be
    followed), read at C level: items of exact lists, tuples and dicts, attributes from an own dict."""
    obj = root
    for step in _PATH_STEP.findall(path):
        try:
            if step.startswith("."):
                obj = attribute(obj, step[1:])
                continue
            inner = step[1:-1]
            key: Any = inner[1:-1] if inner.startswith("'") else int(inner)
            if type(obj) not in (list, tuple, dict):
                return None
            obj = obj[key]
        except Exception:
            return None
    return obj


_PATH_STEP = re.compile(r"\[(?:'(?:[^'\\]|\\.)*'|-?\d+)\]|\.[A-Za-z_][A-Za-z_0-9]*")


def attribute(obj: Any, name: str) -> Any:
    """*obj*'s own attribute *name* as stored (its ``__dict__`` entry), no property or ``__getattr__`` run."""
    space = own_dict(obj)
    return space.get(name) if space is not None else None


def own_dict(obj: Any) -> dict[str, Any] | None:
    for ref in gc.get_referents(obj) if type(obj).__dictoffset__ else ():
        if type(ref) is dict and ref is instance_dict(obj):
            return ref
    return None


def instance_dict(obj: Any) -> Any:
    try:
        return object.__getattribute__(obj, "__dict__")
    except Exception:
        return None
