"""What a class looks like to aliascheck, here and in a fresh process.

:func:`class_state` is the view of a class both cloudpickle checks compare: its
own ``__dict__`` as the fingerprint engine sees it, with functions reduced to
their name and code (a load rebuilds every method of a reconciled class as a new,
equal function object; that is no change, a different body is), descriptors that
``type`` makes (``__dict__``, ``__weakref__``, ``__slots__`` members) left out, and
an ABC's registry as the names of its registered subclasses.

:func:`compare` is the other direction of the surprise. In one process
``loads(dumps(C))`` returns the live ``C`` itself, so a round trip hides what a
worker would reconstruct (cloudpipe/cloudpickle#313). It loads the pickle in a
fresh interpreter and reports every attribute whose value there differs from
the live class here: what a worker sees, and (for the attributes the pickle
carries) what an in-process ``loads`` would reset the live class to.
"""

from __future__ import annotations

import abc
import os
import pickle
import subprocess
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

import xxhash

import aliascheck.sites as sites

from .diff import Change, diff_shadows, show
from .errors import AliascheckError, AliasFinding
from .findings import Finding
from .fingerprint import Fingerprint, fingerprint
from .shadow import qualname_of

__all__ = ["assert_same", "changed_names", "class_state", "compare", "pickled_state", "state_changes"]

KIND, CHECK = "fresh-class", "fresh-process"
_TYPE_MADE = (types.GetSetDescriptorType, types.MemberDescriptorType)
_SKIP = frozenset({"__annotate_func__"})  # 3.14: rebuilt by Python, never pickled


def class_state(cls: type, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """*cls*'s own attributes (or those of *keys* it has), as compared by the cloudpickle checks."""
    own = cls.__dict__
    names = own if keys is None else [k for k in keys if k in own]
    out: dict[str, Any] = {}
    for name in names:
        value = own[name]
        if name in _SKIP or isinstance(value, _TYPE_MADE):
            continue
        if name == "_abc_impl" and isinstance(cls, abc.ABCMeta):
            registry = abc._get_dump(cls)[0]  # type: ignore[attr-defined]
            out[name] = _registry(ref() for ref in registry)
        else:
            out[name] = entry(value)
    return out


def pickled_state(clsdict: Mapping[str, Any]) -> dict[str, Any]:
    """The same view of the attribute dict cloudpickle's ``_class_setstate`` is about to write."""
    return {
        name: _registry(value) if name == "_abc_impl" else entry(value)
        for name, value in clsdict.items()
        if name not in _SKIP and not isinstance(value, _TYPE_MADE)
    }


def entry(value: Any) -> Any:
    """One attribute value: functions and their wrappers by name and code, the rest as it is."""
    if isinstance(value, types.FunctionType):
        return f"<function {value.__name__} {_code_digest(value)}>"  # short: reports cut at 60
    if isinstance(value, (staticmethod, classmethod)):
        return f"<{type(value).__name__} {entry(value.__func__)}>"
    if isinstance(value, property):
        return f"<property {' '.join(str(entry(f)) for f in (value.fget, value.fset, value.fdel) if f)}>"
    return value


def _registry(classes: Iterable[Any]) -> list[str]:
    return sorted(qualname_of(c) for c in classes if c is not None)


def _code_text(code: types.CodeType) -> str:
    # What the function does, as text that is the same in every process: line
    # numbers and file names left out, frozenset constants in sorted order.
    consts = [_code_text(c) if isinstance(c, types.CodeType)
              else sorted(map(repr, c)) if isinstance(c, frozenset) else c for c in code.co_consts]
    return repr((code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                 code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags, consts))


def _code_digest(fn: types.FunctionType) -> str:
    # As compiled without aliascheck's marks: cloudpickle pickles that code (the live class's methods
    # are marked, the pickled and the fresh process's are not), and a mark is no change of the method.
    rewrite = sys.modules.get("aliascheck.boundary.rewrite")
    text = _code_text(fn.__code__ if rewrite is None else rewrite.plain_code(fn.__code__))
    if fn.__defaults__ or fn.__kwdefaults__:
        text += fingerprint((fn.__defaults__, fn.__kwdefaults__)).canonical_digest()
    return xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass"))[:8]


def state_changes(before: Mapping[str, Any] | Fingerprint, after: Mapping[str, Any] | Fingerprint,
                  keys: Iterable[str] | None = None) -> list[Change]:
    """Per attribute, what differs between two :func:`class_state` views; paths are attribute names."""
    b, a = _shadow(before), _shadow(after)
    names = list(dict.fromkeys([*b, *a])) if keys is None else list(keys)
    out: list[Change] = []
    for name in names:
        if name in b and name in a:
            out.extend(diff_shadows(b[name], a[name], name))
        elif name in b:
            out.append(Change(name, show(b[name]), "<missing>", "removed"))
        elif name in a:
            out.append(Change(name, "<missing>", show(a[name]), "added"))
    return out


def changed_names(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The attributes of *after* that *before* lacks or holds with another value."""
    fp_b, fp_a = fingerprint(dict(before)), fingerprint(dict(after))
    if fp_b.digest == fp_a.digest:  # the common case: the pickle writes back what is there
        return []
    b, a = _shadow(fp_b), _shadow(fp_a)
    return [name for name in a if name not in b or diff_shadows(b[name], a[name], name)]


def _shadow(state: Mapping[str, Any] | Fingerprint) -> dict[str, Any]:
    fp = state if isinstance(state, Fingerprint) else fingerprint(dict(state))
    tree = fp.shadow()
    return tree if isinstance(tree, dict) else {}


# -- the fresh process ----------------------------------------------------------
def compare(obj: Any, *, timeout: float = 60.0) -> list[Finding]:
    """Load *obj* (pickled data, or an object to ``cloudpickle.dumps``) in a fresh interpreter.

    Returns one ``fresh-class`` finding per attribute of a dynamic class whose
    value there (``after``) differs from the live class here (``before``).
    Classes that do not exist in this process are not compared.
    """
    from cloudpickle import cloudpickle as cp

    data = bytes(obj) if isinstance(obj, (bytes, bytearray, memoryview)) else cp.dumps(obj)
    site, stack = sites.where()
    status, answer = _run_child(data, timeout)
    # The running test's ledger applies its ignore patterns and keeps what is found;
    # outside a run, a ledger of its own (no patterns) makes the findings.
    from .ledger import Ledger, active

    led = active() or Ledger()
    def report(owner: str, changes: list[Change]) -> list[Finding]:
        return led.report(KIND, changes, owner=owner, site=site, stack=stack, check=CHECK)

    if status == "error":
        return report("<pickle>", [Change("<loads>", "loads in this process", answer)])
    found = []
    for tracker_id, fresh_fp in answer.items():
        live = cp._DYNAMIC_CLASS_TRACKER_BY_ID.get(tracker_id)
        if live is None:
            continue
        # qualname_of: a rebuilt class's __qualname__ loses its "<locals>" part
        found += report(qualname_of(live), state_changes(class_state(live), fresh_fp))
    return found


def assert_same(obj: Any, *, timeout: float = 60.0) -> None:
    """Raise :class:`~aliascheck.errors.AliasFinding` if a fresh process would see other classes."""
    __tracebackhide__ = True
    found = compare(obj, timeout=timeout)
    if found:
        from .report import failure

        raise AliasFinding(found, failure(found))


def _run_child(data: bytes, timeout: float) -> tuple[str, Any]:
    code = "from aliascheck.fresh import _child; _child()"
    try:
        proc = subprocess.run([sys.executable, "-c", code], input=pickle.dumps((sys.path, data)),
                              capture_output=True, timeout=timeout, check=False, cwd=os.getcwd())
    except subprocess.TimeoutExpired:
        raise AliascheckError(f"aliascheck.fresh: the fresh process did not answer within {timeout} s") from None
    if proc.returncode != 0 or not proc.stdout:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise AliascheckError(f"aliascheck.fresh: the fresh process failed ({proc.returncode}): {tail[0]}")
    status, answer = pickle.loads(proc.stdout)  # our own child's answer: Fingerprints and strings
    return status, answer


def _child() -> None:
    """In the fresh process: load the pickle, describe every class cloudpickle rebuilt."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the load prints goes to stderr, not into the answer
    paths, data = pickle.load(sys.stdin.buffer)
    sys.path[:] = paths
    from cloudpickle import cloudpickle as cp

    try:
        obj = cp.loads(data)
    except Exception as exc:
        answer: tuple[str, Any] = ("error", f"{type(exc).__name__}: {exc}")
    else:
        classes = [(tid, cls) for tid, cls in list(cp._DYNAMIC_CLASS_TRACKER_BY_ID.items()) if isinstance(cls, type)]
        answer = ("ok", {tid: fingerprint(class_state(cls)) for tid, cls in classes})
        del obj
    pickle.dump(answer, out)
    out.close()
