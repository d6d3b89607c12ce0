"""``aliascheck check MODULE:FACTORY``: drive fresh nodes through handover schedules.

A factory returns a fresh node: a torchdata ``BaseNode``, a ``Loader``, or any
Stateful iterator (``__next__`` or ``__iter__``, ``state_dict()``, and
``load_state_dict()`` or ``reset(state)``). A :class:`Schedule` builds one,
takes ``state_dict()`` after some items, steps it further through the harness
(a background thread with a timeout) and re-verifies every snapshot with the
session's ledger, so a finding reads exactly as under ``pytest --aliascheck``.
Then a fresh node is restored from each snapshot and must yield the original
run's items from there on (by fingerprint): resume-equivalence, finding kind
``resume``, which also catches a restore that is wrong with no aliasing at all.
:func:`explore` lets Hypothesis search schedules and shrink a failure.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

import aliascheck.harness as harness
import aliascheck.sites as sites

from .config import Options
from .diff import Change, show
from .errors import HarnessError, UsageError
from .findings import Finding
from .fingerprint import Fingerprint, fingerprint
from .harness import shutdown
from .isolation import isolate
from .kinds import LOAD_METHODS
from .ledger import Stats
from .session import Session
from .shadow import qualname_of

# Factory keywords that change how a node hands state over, with the range explored.
KNOBS: dict[str, tuple[int, int]] = {"prefetch_factor": (1, 4), "snapshot_frequency": (1, 3)}
RESUME = "resume"  # the finding kind (and check) of a restore that does not continue the original run
RESUME_AFTER_MUTATION = "the snapshot changed after it was taken (see the mutation finding): fix that first"
OUR_CALL = "state_dict() called by aliascheck check"
REAP_BATCH = 48  # restored nodes left running (idle) before they are shut down together


# -- the target -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Style:
    """How to drive a node: ``next()`` it or ``iter()`` it first; restore by which method."""

    steps_itself: bool  # has __next__ (a BaseNode, an iterator); else iter() it (a Loader)
    restore: str  # "load_state_dict" or "reset"


@dataclass(frozen=True, slots=True)
class Target:
    spec: str  # "module:factory"
    factory: Callable[..., Any]
    style: Style
    node_type: type = object
    knobs: tuple[str, ...] = ()  # the KNOBS the factory accepts
    file: str = ""  # where the factory is defined, for annotations
    line: int = 0
    ranges: tuple[tuple[str, int, int], ...] = ()  # knobs explored over other ranges than KNOBS'
    # The replay test's import lines and call for some knobs (a swept class); else "from module import factory".
    render: Callable[[dict[str, int]], tuple[list[str], str]] | None = None

    def build(self, knobs: dict[str, int]) -> Any:
        return _user(f"{self.spec}()", self.factory, **knobs)

    def range_of(self, knob: str) -> tuple[int, int]:
        return next(((lo, hi) for k, lo, hi in self.ranges if k == knob), KNOBS.get(knob, (0, 0)))


def load(spec: str) -> Target:
    """Import ``MODULE:FACTORY``, call the factory once, and tell how to drive what it returns."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"expected MODULE:FACTORY (e.g. mypkg.pipeline:make_loader), not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import {module_name!r}: {exc}") from None
    except Exception as exc:
        raise HarnessError(f"importing {module_name!r} raised {type(exc).__name__}: {exc}") from _trimmed(exc)
    factory: Any = module
    for part in attr.split("."):
        factory = getattr(factory, part, _MISSING)
        if factory is _MISSING:
            raise UsageError(f"module {module_name!r} has no attribute {attr!r}")
    if not callable(factory):
        raise UsageError(f"{spec} is not callable (it is of type {type(factory).__name__}): "
                         "FACTORY must return a fresh node")
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        signature = None
    knobs: tuple[str, ...] = ()
    if signature is not None:
        try:
            signature.bind()
        except TypeError:
            raise UsageError(f"{spec}{signature} must be callable with no arguments") from None
        knobs = tuple(k for k in KNOBS if k in signature.parameters)
    node = _user(f"{spec}()", factory)
    try:
        style = style_of(node, spec)
        again = _user(f"{spec}()", factory)
        if again is node:  # restoring "a fresh node" would restore the original itself
            raise UsageError(f"{spec}() returned the same {qualname_of(type(node))} twice: "
                             "FACTORY must build a fresh node on every call")
        shutdown(again)
    finally:
        shutdown(node)
    file, line = _defined_at(factory)
    return Target(spec, factory, style, type(node), knobs, file, line)


_MISSING = object()


def style_of(node: Any, spec: str) -> Style:
    missing = []
    steps_itself = hasattr(node, "__next__")
    if not steps_itself and not hasattr(node, "__iter__"):
        missing.append("__next__/__iter__")
    if not callable(getattr(node, "state_dict", None)):
        missing.append("state_dict()")
    restore = next((m for m in ("load_state_dict", "reset") if callable(getattr(node, m, None))), "")
    if not restore:
        missing.append("load_state_dict() or reset(state)")
    if missing:
        raise UsageError(
            f"{spec}() returned a {qualname_of(type(node))}, which is not a node: it has no {', '.join(missing)}"
            " (expected a torchdata node, a Loader, or a Stateful iterator)"
        )
    return Style(steps_itself, restore)


@contextmanager
def cwd_importable() -> Iterator[None]:
    """Import from the current directory, as ``python -m`` does (console scripts do not)."""
    added = os.getcwd() not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, os.getcwd())
    try:
        yield
    finally:
        if added and os.getcwd() in sys.path:
            sys.path.remove(os.getcwd())


def _defined_at(factory: Any) -> tuple[str, int]:
    try:
        file, line = inspect.getsourcefile(factory) or "", inspect.getsourcelines(factory)[1]
    except (TypeError, OSError):
        return "", 0
    return os.path.relpath(file) if file.startswith(os.getcwd() + os.sep) else file, line


# -- user code and its exceptions -------------------------------------------
def _ours(exc: BaseException) -> bool:
    """True when *exc* was raised in aliascheck's own code: a bug of ours, not the user's."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and sites.is_ours(tb.tb_frame.f_code.co_filename)


def _trimmed(exc: BaseException) -> BaseException:
    """*exc* without aliascheck's frames at the top of its traceback: the user's code first."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and sites.is_ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return exc.with_traceback(tb)


def _blame(what: str, exc: Exception) -> BaseException:
    if _ours(exc):
        return exc
    error = HarnessError(f"{what} raised {type(exc).__name__}: {exc}")
    error.__cause__, error.__suppress_context__ = _trimmed(exc), True
    return error


def _user(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the user's code; what it raises becomes a HarnessError that keeps its traceback."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        raise _blame(what, exc)  # noqa: B904 (_blame sets the cause: the user's exception, trimmed)


# -- shutting nodes down ----------------------------------------------------
def shutdown_all(nodes: list[Any]) -> None:
    """:func:`shutdown` each node in a thread of its own, all joined.

    Each may wait out one poll of a worker blocked on its semaphore (torchdata's
    ``QUEUE_TIMEOUT``, 0.1 s): together that is one wait, not one per node.
    """
    errors: list[Exception] = []

    def stop(node: Any) -> None:
        try:
            shutdown(node)
        except Exception as exc:  # a user's _shutdown(): raised in the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=stop, args=(n,), name="aliascheck-shutdown", daemon=True) for n in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise _blame("shutting a node down", errors[0])


# -- schedules ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Schedule:
    """Take ``state_dict()`` after each of *snaps* items, then *ahead* more items; build with *knobs*."""

    snaps: tuple[int, ...]
    ahead: int
    knobs: tuple[tuple[str, int], ...] = ()

    def __str__(self) -> str:
        parts = [f"snap={','.join(map(str, self.snaps))}", f"ahead={self.ahead}"]
        return " ".join(parts + [f"{k}={v}" for k, v in self.knobs])

    @classmethod
    def parse(cls, text: str, knobs: tuple[str, ...]) -> Schedule:
        """``"snap=0,2 ahead=3 prefetch_factor=1"`` (what ``str()`` and the explore report print)."""
        values: dict[str, str] = {}
        for word in text.split():
            key, eq, value = word.partition("=")
            if not eq or key in values:
                raise UsageError(f"--schedule: expected KEY=VALUE words (snap=0,2 ahead=3), not {word!r}")
            values[key] = value
        try:
            snaps = tuple(sorted({int(s) for s in values.pop("snap", "").split(",") if s}))
            ahead = int(values.pop("ahead", "4"))
            extra = tuple((k, int(v)) for k, v in values.items())
        except ValueError as exc:
            raise UsageError(f"--schedule {text!r}: {exc}") from None
        unknown = [k for k, _ in extra if k not in knobs]
        if unknown:
            accepted = ", ".join(knobs) or "none"
            raise UsageError(f"--schedule: the factory takes no {', '.join(unknown)} (knobs it takes: {accepted})")
        if not snaps or snaps[0] < 0 or ahead < 0:
            raise UsageError(f"--schedule {text!r}: snap needs at least one step >= 0, ahead must be >= 0")
        return cls(snaps, ahead, extra)


def default_schedules(target: Target, steps: int) -> list[Schedule]:
    """A snapshot before the first item and after a few; one with a single step ahead; each prefetch edge."""
    plans = [Schedule((0, 1, 3), steps), Schedule((2,), 1)]
    if "prefetch_factor" in target.knobs:
        lo, hi = target.range_of("prefetch_factor")
        plans += [Schedule((0, 1, 3), steps, (("prefetch_factor", pf),)) for pf in (lo, hi)]
    return plans


def schedules(knobs: tuple[str, ...], ranges: Callable[[str], tuple[int, int]] = KNOBS.__getitem__) -> Any:
    """A Hypothesis strategy for schedules; it shrinks towards few, early snapshots and low knobs."""
    from hypothesis import strategies as st

    snaps = st.lists(st.integers(0, 8), min_size=1, max_size=3, unique=True).map(lambda xs: tuple(sorted(xs)))
    values = st.tuples(*(st.integers(*ranges(k)) for k in knobs)).map(lambda vs: tuple(zip(knobs, vs, strict=False)))
    return st.builds(Schedule, snaps, st.integers(1, 6), values)


# -- driving one node -------------------------------------------------------
@dataclass(slots=True)
class _Tape:
    """An iterator that records the fingerprint of every item it passes on, and how it ended."""

    it: Any
    items: list[Fingerprint] = field(default_factory=list)
    ended: bool = False
    error: Exception | None = None

    def __iter__(self) -> _Tape:
        return self

    def __next__(self) -> Any:
        try:
            item = next(self.it)
            self.items.append(fingerprint(item))
        except StopIteration:
            self.ended = True
            raise
        except Exception as exc:  # the harness only notes it: kept to be re-raised, traceback and all
            self.error = exc
            raise
        return item


def _instrumented(obj: Any, method: str) -> bool:
    """Does an adapter record this method's handovers (or re-entries)? Overrides call super()."""
    cls = obj if isinstance(obj, type) else type(obj)
    import aliascheck.boundary.runtime as boundary

    return any(hasattr(c.__dict__.get(method), "__aliascheck_original__")
               or id(getattr(c.__dict__.get(method), "__code__", None)) in boundary.ACTIVE for c in cls.__mro__)


def _watch(cls: type) -> Callable[[], None]:
    """Give a Stateful class no adapter covers the generic adapter's checkpoints; returns the undo.

    The same wrappers ``aliascheck_stateful`` installs under pytest, so its
    findings read the same. A class that cannot be patched (a builtin type) is
    recorded by :class:`_Driven` instead.
    """
    from aliascheck.plugins.generic import watch_class

    undos = []
    if not _instrumented(cls, "state_dict"):
        for base in cls.__mro__[:-1]:
            if any(m in base.__dict__ for m in ("state_dict", "load_state_dict", "reset", "__iter__")):
                try:
                    undos.append(watch_class(base))
                except (TypeError, AttributeError):
                    pass

    def undo() -> None:
        while undos:
            undos.pop()()

    return undo


class _Driven:
    """One node from the factory, driven as its style says, every item on its tape."""

    def __init__(self, checker: Checker, schedule: Schedule) -> None:
        self.checker = checker
        self.target = checker.target
        self.obj = self.target.build(dict(schedule.knobs))
        checker.built.append(self.obj)
        self.tape = _Tape(iter(()))

    def start(self) -> None:
        obj = self.obj
        self.tape = _Tape(obj if self.target.style.steps_itself else _user(f"iter({self.target.spec}())", iter, obj))

    def state(self) -> Any:
        # A handover recorded by this very call lands on the first frame outside aliascheck.
        self.checker.our_sites.add(sites.where(1)[0])
        state = _user(f"{self.target.spec}().state_dict()", self.obj.state_dict)
        if not _instrumented(self.obj, "state_dict"):  # a plain Stateful iterator: record it here
            self.checker.session.ledger.watch(state, self.obj, kind="state_dict")
        return state

    def restore(self, state: Any) -> None:
        method = self.target.style.restore
        if not _instrumented(self.obj, method):
            self.checker.session.ledger.loaded(state, self.obj, method)
        _user(f"{self.target.spec}().{method}(state)", getattr(self.obj, method), state)

    def advance(self, n: int) -> None:
        """Take *n* more items through the harness: a background thread, joined or timed out."""
        if n <= 0 or self.tape.ended:
            return
        timeout = self.checker.options.step_timeout
        result = harness.step(self.tape, type(self.obj).__qualname__, n, timeout)
        if self.tape.error is not None:
            error, self.tape.error = self.tape.error, None
            raise _blame(f"stepping {self.target.spec}()", error)
        if result.note.startswith("timed out"):
            raise StepTimeout(f"stepping {self.target.spec}() {result.note}")
        if result.note and result.note != "exhausted":
            raise HarnessError(f"stepping {self.target.spec}() {result.note}")


class StepTimeout(HarnessError):
    """Stepping a node did not finish within the step timeout (its thread is left running, daemon)."""


# -- the checker --------------------------------------------------------------
@dataclass
class Outcome:
    target: Target
    ran: list[Schedule]
    failing: list[Schedule]
    findings: list[Finding]  # every occurrence, in the order seen; aliascheck.bugs groups them
    stats: Stats
    minimal: Schedule | None = None  # explore: the shrunk failing schedule
    explored: bool = False

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


class Checker:
    """One session over many schedules of one target."""

    def __init__(self, target: Target, options: Options) -> None:
        self.target = target
        self.options = options
        self.session = Session(options)
        self.built: list[Any] = []  # this schedule's nodes
        self.spent: list[Any] = []  # nodes done with, shut down in batches
        self.ran: list[Schedule] = []
        self.failing: list[Schedule] = []
        self.findings: list[Finding] = []
        self.checkpoints: list[Any] = []  # the copies this schedule's fresh nodes were restored from
        self.our_sites = {"<unknown>"}  # where handovers made by our own state_dict() calls land
        self._unwatch: Callable[[], None] = lambda: None

    def __enter__(self) -> Checker:
        self.session.start()
        self.session.adapters.refresh()
        self._unwatch = _watch(self.target.node_type)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._reap(0)
        finally:
            self._unwatch()
            self.session.stop()

    def _reap(self, keep: int) -> None:
        if len(self.spent) > keep:
            spent, self.spent = self.spent, []
            shutdown_all(spent)

    def outcome(self, minimal: Schedule | None = None, explored: bool = False) -> Outcome:
        return Outcome(self.target, self.ran, self.failing, self.findings, self.session.stats, minimal, explored)

    def run(self, schedule: Schedule) -> list[Finding]:
        """Run one schedule; its findings (also kept for the outcome)."""
        self.ran.append(schedule)
        session = self.session
        session.begin_test(f"{self.target.spec} [{schedule}]")
        session.ledger.owning = True  # nodes built now are this schedule's
        try:
            self._drive(schedule)
        except HarnessError as exc:
            session.abandon_test()
            raise type(exc)(f"{exc} [schedule {schedule}]") from exc.__cause__
        except BaseException:
            session.abandon_test()
            raise
        finally:
            self.spent += self.built
            self.built = []
        self._reap(REAP_BATCH)
        found = [self._site(f) for f in session.end_test(0)]
        self.checkpoints.clear()
        if any(f.severity == "error" for f in found):
            self.failing.append(schedule)
        self.findings.extend(found)
        return found

    def _drive(self, schedule: Schedule) -> None:
        original = _Driven(self, schedule)
        original.start()
        kept: list[tuple[int, Any]] = []  # held, as a user's checkpoint would be
        for snap in schedule.snaps:
            original.advance(snap - len(original.tape.items))
            if original.tape.ended:
                break
            kept.append((snap, original.state()))
        original.advance(schedule.ahead)
        self.session.ledger.verify_all("harness")
        # Stopped before any restore: a worker still filling its buffer would change the kept
        # snapshots under the restores, which would then depend on timing.
        shutdown(original.obj)
        mutated = any(f.kind == "mutation" for f in self.session.ledger.findings)
        for snap, state in kept:
            if self._resume(original, snap, state, schedule, mutated):
                return  # one per schedule: the earliest snapshot that does not resume

    def _resume(self, original: _Driven, snap: int, state: Any, schedule: Schedule, mutated: bool) -> bool:
        """Restore a fresh node from the snapshot after *snap* items; report (and say) if it does not resume."""
        fresh = _Driven(self, schedule)
        # A copy, as a checkpoint read back from disk is: what the restored node keeps of it and
        # changes is then that node's load (its reset/load_state_dict kept the state it was given),
        # judged while this checker holds the copy, not confused with the original's handover.
        checkpoint = isolate(state)
        self.checkpoints.append(checkpoint)
        fresh.restore(checkpoint)
        fresh.start()
        want = original.tape.items[snap:]
        # A snapshot after the last item may mean "next epoch" (a Loader restarts): no end expected.
        expect_end = original.tape.ended and snap < len(original.tape.items)
        fresh.advance(len(want) + expect_end)
        for i, (before, after) in enumerate(zip_longest(want, fresh.tape.items)):
            if before is not None and after is not None and before == after:
                continue
            change = Change(f"item {snap + i}", "<end>" if before is None else show(before.shadow()),
                            "<end>" if after is None else show(after.shadow()))
            led = self.session.ledger
            return bool(led.report(
                RESUME, [change], owner=qualname_of(type(fresh.obj)), label=led.label(original.obj),
                site=f"state_dict() after {snap} item{'' if snap == 1 else 's'}", check=RESUME, thread="",
                origin=sites.origin(type(fresh.obj), LOAD_METHODS),
                # After a mutation the wrong resume is that bug's consequence, not a bug of its own.
                severity="info" if mutated else None, hint=RESUME_AFTER_MUTATION if mutated else "",
            ))
        return False

    def _site(self, finding: Finding) -> Finding:
        """A handover made by our own ``state_dict()`` call names that call, not our caller's frame."""
        if finding.handover in self.our_sites:
            return dataclasses.replace(finding, handover=OUR_CALL, stack=())
        return finding


def check(target: Target, options: Options, plan: list[Schedule]) -> Outcome:
    """Run every schedule of *plan* on fresh nodes of *target*."""
    with Checker(target, options) as checker:
        for schedule in plan:
            checker.run(schedule)
    return checker.outcome()


class _Failed(Exception):
    def __init__(self, schedule: Schedule, findings: list[Finding]) -> None:
        super().__init__(str(schedule))
        self.schedule, self.findings = schedule, findings


def explore(target: Target, options: Options, examples: int, rejected: list[HarnessError] | None = None) -> Outcome:
    """Search up to *examples* schedules with Hypothesis; shrink the first failure to the smallest.

    With a *rejected* list, a schedule whose node raised (not hung) is noted there and
    the search goes on: a swept class may not accept every argument set it is given.
    """
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings

    checker = Checker(target, options)
    stopped: list[Exception] = []

    @settings(max_examples=examples, database=None, derandomize=True, deadline=None,
              phases=(Phase.generate, Phase.shrink), verbosity=Verbosity.quiet,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(schedules(target.knobs, target.range_of))
    def search(schedule: Schedule) -> None:
        if stopped:
            return
        try:
            found = checker.run(schedule)
        except HarnessError as exc:
            if rejected is None or isinstance(exc, StepTimeout):
                stopped.append(exc)
            else:
                rejected.append(exc)
            return
        except Exception as exc:  # the node raised or hung (or we did): shrinking it would repeat every timeout
            stopped.append(exc)
            return
        if any(f.severity == "error" for f in found):
            raise _Failed(schedule, found)

    with checker:
        try:
            search()
        except _Failed as failed:  # raised last by the shrunk example
            outcome = checker.outcome(failed.schedule, explored=True)
            outcome.findings = failed.findings
            return outcome
        if stopped:
            raise stopped[0]
    return checker.outcome(explored=True)
