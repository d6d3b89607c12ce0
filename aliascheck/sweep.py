"""``aliascheck check PACKAGE``: every node class a package defines, built from its signature and checked.

:func:`discover` imports the target (a package recursively, test modules left
out) and finds the concrete classes it defines that are torchdata ``BaseNode``\\ s
or implement a state protocol together with iteration. :func:`run_item` builds
one from its signature (:mod:`aliascheck.build`), or with the user's factory,
and runs it through :mod:`aliascheck.check`'s schedules, re-verification and
resume equivalence (or ``--explore``, which shrinks the construction arguments
with the schedule). A class that cannot be built is *skipped* with the reason.
:class:`Pool` runs classes in child processes (``--workers``); what crosses back
is JSON, never pickles. The table and the other formats are at the bottom.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from . import build
from .config import match
from .errors import HarnessError, UsageError
from .findings import Finding
from .ledger import Stats
from .reproducer import snippet

STATUSES = ("checked", "findings", "skipped", "error")
TEST_MODULES = ("test", "tests", "testing", "conftest", "__main__")


@dataclass(frozen=True, slots=True)
class Item:
    """One class to check: built from its signature, or by the user's ``factory`` (``module:function``)."""

    module: str
    qualname: str
    factory: str = ""

    @property
    def name(self) -> str:
        return f"{self.module}.{self.qualname}"


@dataclass
class Result:
    name: str
    status: str  # one of STATUSES
    reason: str = ""  # why skipped, or what went wrong (one line)
    detail: str = ""  # a traceback, for an import failure or an internal error
    seconds: float = 0.0
    built: str = ""  # the construction the default schedules used
    schedules: int = 0
    failing: list[str] = field(default_factory=list)
    minimal: str | None = None  # --explore: the shrunk failing schedule (construction arguments included)
    minimal_built: str = ""
    snippet: str | None = None
    file: str = ""  # where the class is defined
    line: int = 0
    findings: list[Finding] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["findings"] = [f.to_json() for f in self.findings]
        data["stats"] = {**asdict(self.stats), "owners": dict(self.stats.owners)}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        stats = data.pop("stats")
        findings = [Finding.from_json(f) for f in data.pop("findings")]
        owners = stats.pop("owners")
        result = cls(**data, findings=findings, stats=Stats(**stats))
        result.stats.owners.update(owners)
        return result


@dataclass
class Sweep:
    target: str
    results: list[Result]
    abstract: list[str] = field(default_factory=list)  # node classes that are not concrete: not checked
    private: list[str] = field(default_factory=list)  # left out without --include-private
    explored: bool = False
    seconds: float = 0.0

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    @property
    def stats(self) -> Stats:
        total = Stats()
        for result in self.results:
            total.merge(result.stats)
        return total

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)


# -- discovery ----------------------------------------------------------------
def discover(target: str, include_private: bool = False) -> tuple[list[Item], Sweep]:
    """The classes to check in *target*, and a :class:`Sweep` holding the modules that failed to import."""
    sweep = Sweep(target, [])
    try:
        root = importlib.import_module(target)
    except ImportError as exc:
        if exc.name and target.startswith(exc.name) and exc.name not in sys.modules:
            raise UsageError(f"cannot import {target!r}: {exc}") from None
        root = None
        sweep.results.append(_import_failure(target, exc))
    except Exception as exc:
        root = None
        sweep.results.append(_import_failure(target, exc))
    items: list[Item] = []
    for module in _modules(root, sweep) if root is not None else ():
        for cls in _classes(module):
            if not _concrete(cls):
                sweep.abstract.append(f"{cls.__module__}.{cls.__qualname__}")
            elif cls.__name__.startswith("_") and not include_private:
                sweep.private.append(f"{cls.__module__}.{cls.__qualname__}")
            else:
                items.append(Item(cls.__module__, cls.__qualname__))
    return items, sweep


def _modules(root: types.ModuleType, sweep: Sweep) -> Iterator[types.ModuleType]:
    yield root
    for info in pkgutil.iter_modules(getattr(root, "__path__", None) or [], root.__name__ + "."):
        last = info.name.rpartition(".")[2]
        if last in TEST_MODULES or last.startswith("test_") or last.endswith("_test"):
            continue
        try:
            module = importlib.import_module(info.name)
        except BaseException as exc:  # its traceback is the report; the sweep goes on
            if not isinstance(exc, Exception):
                raise
            sweep.results.append(_import_failure(info.name, exc))
            continue
        yield from _modules(module, sweep) if info.ispkg else (module,)


def _import_failure(name: str, exc: BaseException) -> Result:
    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return Result(name, "skipped", f"import failed: {type(exc).__name__}: {exc}", detail=detail)


def _classes(module: types.ModuleType) -> list[type]:
    """The node classes *module* defines (not those it imports)."""
    out = []
    for value in list(vars(module).values()):
        if isinstance(value, type) and value.__module__ == module.__name__ and build.is_node_class(value):
            out.append(value)
    return out


def _concrete(cls: type) -> bool:
    if inspect.isabstract(cls) or getattr(cls, "_is_protocol", False):
        return False
    base = build._base_node()
    if base is not None and issubclass(cls, base):  # BaseNode's next/get_state only raise NotImplementedError
        return cls.next is not base.next and cls.get_state is not base.get_state  # type: ignore[attr-defined]
    return True


# -- the user's factories -------------------------------------------------------
def with_factories(items: list[Item], target: str, specs: tuple[str, ...]) -> list[Item]:
    """Give each class the user's factory, if any: ``@aliascheck.factory`` in the target, or config lines."""
    found: dict[str, str] = {}
    for spec in specs:
        cls = _factory_class(spec)
        found[f"{cls.__module__}.{cls.__qualname__}"] = spec
    for module in [m for name, m in list(sys.modules.items()) if name == target or name.startswith(target + ".")]:
        for value in list(vars(module).values()):
            if callable(value) and getattr(value, build.FACTORY_MARK, None) is not None \
                    and getattr(value, "__module__", None) == module.__name__:
                spec = f"{module.__name__}:{value.__qualname__}"
                cls = _factory_class(spec)
                found.setdefault(f"{cls.__module__}.{cls.__qualname__}", spec)
    out = [Item(i.module, i.qualname, found.pop(i.name, "")) for i in items]
    for name, spec in found.items():  # a factory for a class outside the target (or a private one)
        where, _, qualname = name.rpartition(".")
        out.append(Item(where, qualname, spec))
    return out


def _factory_class(spec: str) -> type:
    from . import check

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"aliascheck_factories: expected module:function, not {spec!r}")
    try:
        fn = _resolve(module_name, attr)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"aliascheck_factories: cannot load {spec}: {exc}") from None
    cls = build.built_by(fn)
    if cls is None:  # it does not say: build one and look
        node = check._user(f"{spec}()", fn)
        cls = type(node)
        check.shutdown(node)
    return cls


def _resolve(module: str, qualname: str) -> Any:
    value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


# -- one class ------------------------------------------------------------------
class Skip(Exception):
    """The class cannot be checked as built: skipped, with this reason."""


def run_item(item: Item, options: Any, explore: int | None = None, schedule: str | None = None) -> Result:
    """Check one class; never raises for what the class does (that is in the result)."""
    from . import check

    start = time.perf_counter()
    result = Result(item.name, "checked")
    try:
        cls = _resolve(item.module, item.qualname)
        result.file, result.line = check._defined_at(cls)
        _check(item, cls, options, explore, schedule, result)
    except (Skip, build.Unbuildable, UsageError) as exc:
        result.status, result.reason = "skipped", str(exc)
    except check.StepTimeout as exc:  # a node that hangs: reported, and the sweep goes on
        result.status, result.reason = "error", str(exc)
    except HarnessError as exc:
        result.status, result.reason = "error", str(exc)
        result.detail = _traceback(exc.__cause__)
    except Exception as exc:
        result.status, result.reason = "error", f"internal error in aliascheck: {type(exc).__name__}: {exc}"
        result.detail = _traceback(exc)
    result.seconds = time.perf_counter() - start
    return result


def _check(item: Item, cls: type, options: Any, explore: int | None, schedule: str | None, result: Result) -> None:
    from . import check

    if item.factory:
        variants: list[dict[str, int]] = [{}]
        target = check.load(item.factory)
        result.built = f"{item.factory}()"
    else:
        target, variants = _target(cls)
        result.built = _render(target, variants[0])
    if schedule:
        plan = [check.Schedule.parse(schedule, target.knobs)]
    else:
        plan = check.default_schedules(target, options.steps)
        plan += [check.Schedule((0, 1, 3), options.steps, tuple(sorted(v.items()))) for v in variants[1:]]
    rejected: list[HarnessError] = []
    if explore:
        outcome = check.explore(target, options, explore, rejected)
    else:
        with check.Checker(target, options) as checker:
            for one in plan:
                try:
                    checker.run(one)
                except check.StepTimeout:
                    raise
                except HarnessError as exc:  # this argument set does not suit the class: the others may
                    rejected.append(exc)
        outcome = checker.outcome()
    if rejected and len(rejected) == len(outcome.ran):
        raise Skip(f"every argument set raised; the last: {rejected[-1]}")
    result.findings, result.stats = outcome.findings, outcome.stats
    result.schedules = len(set(outcome.ran)) - len(rejected)
    result.failing = list(dict.fromkeys(str(s) for s in outcome.failing))
    result.status = "findings" if outcome.errors else "checked"
    if rejected:
        result.reason = f"{len(rejected)} of {len(outcome.ran)} schedules raised; the last: {rejected[-1]}"
    if outcome.minimal is not None:
        result.minimal = str(outcome.minimal)
        result.minimal_built = _render(target, dict(outcome.minimal.knobs))
        result.snippet = snippet(target, outcome.minimal)


def _target(cls: type) -> tuple[Any, list[dict[str, int]]]:
    """A check target that builds *cls* from its signature; the argument sets its constructor accepts."""
    from . import check

    recipe = build.recipe(cls)
    spec = f"{cls.__module__}:{cls.__qualname__}"
    accepted: list[dict[str, int]] = []
    style, failure = None, ""
    for variant in recipe.variants():
        try:
            node = recipe.build(**variant)
        except Exception as exc:
            failure = f"{recipe.call(variant)} raised {type(exc).__name__}: {exc}{_at(exc)}"
            continue
        try:
            style = style or check.style_of(node, spec)
        finally:
            check.shutdown(node)
        accepted.append(variant)
    if style is None:
        raise Skip(f"{failure}; {build.HOW_TO_FACTOR}")
    file, line = check._defined_at(cls)
    target = check.Target(spec, recipe.build, style, cls, recipe.knobs, file, line, recipe.ranges, recipe.render)
    return target, accepted


def _render(target: Any, knobs: dict[str, int]) -> str:
    if target.render is None:
        return f"{target.spec}({', '.join(f'{k}={v}' for k, v in knobs.items())})"
    return str(target.render(knobs)[1])


def _at(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" (at {'/'.join(last.filename.split(os.sep)[-2:])}:{last.lineno})"


def _traceback(exc: BaseException | None) -> str:
    return "" if exc is None else "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


# -- the whole sweep --------------------------------------------------------------
def sweep(target: str, options: Any, *, explore: int | None = None, schedule: str | None = None,
          include_private: bool = False, only: tuple[str, ...] = (), workers: int = 1,
          factories: tuple[str, ...] = ()) -> Sweep:
    start = time.perf_counter()
    items, result = discover(target, include_private)
    items = with_factories(items, target, factories)
    if only:
        items = [i for i in items if any(match(i.name, p) or match(i.qualname, p) for p in only)]
    if not items and not result.results:
        looked = ("concrete classes defined there that subclass torchdata.nodes.BaseNode, or that have "
                  "__iter__/__next__ and state_dict()/load_state_dict() or get_state()/reset()")
        hidden = f" ({len(result.private)} private: --include-private)" if result.private else ""
        selected = f" matching --only {' '.join(only)}" if only else ""
        raise UsageError(f"no node classes{selected} in {target!r}: looked for {looked}{hidden}")
    result.explored = bool(explore)
    if workers > 1 and len(items) > 1:
        result.results += Pool(workers, options, explore, schedule).map(items)
    else:
        result.results += [run_item(i, options, explore, schedule) for i in items]
    result.results.sort(key=lambda r: r.name)
    result.seconds = time.perf_counter() - start
    return result


class Pool:
    """Classes checked in *workers* child processes (``python -m aliascheck.sweep``), one class at a time each.

    A child reads one JSON request per line and answers one JSON result per line on
    a pipe of its own (the user's prints go to stderr). A child that does not answer
    within the deadline is killed, reaped and replaced; its class is an error.
    """

    def __init__(self, workers: int, options: Any, explore: int | None, schedule: str | None) -> None:
        self.workers = workers
        self.setup = {"steps": options.steps, "strict": options.strict, "ignore": list(options.ignore),
                      "timeout": options.step_timeout, "explore": explore, "schedule": schedule,
                      "path": [p for p in sys.path if p]}  # the target may be importable only from here
        # Stepping is bounded by the step timeout inside the child; this bounds a class as a whole.
        self.deadline = 120.0 + 4 * options.step_timeout + 10 * (explore or 0)

    def map(self, items: list[Item]) -> list[Result]:
        todo = list(reversed(items))
        lock = threading.Lock()
        results: list[Result] = []

        def work() -> None:
            child: subprocess.Popen[str] | None = None
            try:
                while True:
                    with lock:
                        if not todo:
                            return
                        item = todo.pop()
                    child = child or self._start()
                    result, child = self._ask(child, item)
                    with lock:
                        results.append(result)
            finally:
                if child is not None:
                    self._stop(child)

        threads = [threading.Thread(target=work, name=f"aliascheck-sweep-{n}") for n in range(self.workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    def _start(self) -> subprocess.Popen[str]:
        child = subprocess.Popen([sys.executable, "-m", "aliascheck.sweep"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdin is not None
        child.stdin.write(json.dumps(self.setup) + "\n")
        child.stdin.flush()
        return child

    def _ask(self, child: subprocess.Popen[str], item: Item) -> tuple[Result, subprocess.Popen[str] | None]:
        assert child.stdin is not None and child.stdout is not None
        answer: list[str] = []
        try:
            child.stdin.write(json.dumps(asdict(item)) + "\n")
            child.stdin.flush()
        except OSError:
            pass
        reader = threading.Thread(target=lambda: answer.append(child.stdout.readline()),  # type: ignore[union-attr]
                                  name="aliascheck-sweep-read", daemon=True)
        reader.start()
        reader.join(self.deadline)
        if reader.is_alive() or not answer or not answer[0]:
            code = child.poll()
            self._stop(child, kill=True)
            reader.join()  # the pipe is closed now: readline has returned
            why = (f"no answer within {self.deadline:g}s: worker process killed" if code is None
                   else f"worker process died (exit code {code})")
            return Result(item.name, "error", why), None
        return Result.from_json(json.loads(answer[0])), child

    @staticmethod
    def _stop(child: subprocess.Popen[str], kill: bool = False) -> None:
        if kill:
            child.kill()
        for stream in (child.stdin, child.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def child_main() -> None:
    """A worker: the setup line, then one class per line until stdin closes."""
    from .config import Options

    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what the user's code prints goes to stderr, never into the answers
    sys.stdout = sys.stderr
    setup = json.loads(sys.stdin.readline())
    sys.path[:0] = [p for p in setup["path"] if p not in sys.path]
    options = Options(enabled=True, steps=setup["steps"], strict=setup["strict"], ignore=tuple(setup["ignore"]),
                      step_timeout=setup["timeout"])
    for line in sys.stdin:
        item = Item(**json.loads(line))
        result = run_item(item, options, setup["explore"], setup["schedule"])
        out.write(json.dumps(result.to_json()) + "\n")
        out.flush()


# -- output -----------------------------------------------------------------------
def table(sweep: Sweep) -> list[str]:
    from .bugs import group

    rows = [("class", "status", "time", "")]
    for r in sweep.results:
        bugs = [b for b in group(r.findings) if b.severity != "info"]
        if r.status == "findings":
            note = "; ".join(f"[{b.kind}] {b.gist}" for b in bugs if b.severity == "error")
        elif r.status == "checked":
            note = f"{_n(r.schedules, 'schedule')}, built as {r.built}" + (f" ({r.reason})" if r.reason else "")
            warnings = sum(b.severity == "warning" for b in bugs)
            note += f"; {_n(warnings, 'warning')}" if warnings else ""
        else:
            note = r.reason
        rows.append((r.name, r.status, f"{r.seconds:.1f}s", note))
    width = max(len(row[0]) for row in rows)
    return [f"{a:<{width}}  {b:<8}  {c:>6}  {d}".rstrip() for a, b, c, d in rows]


def summary(sweep: Sweep) -> str:
    from .bugs import counts, group

    bugs = [b for b in group(sweep.findings) if b.severity == "error"]
    explored = "explored, " if sweep.explored else ""
    text = (f"aliascheck check {sweep.target}: {_n(len(sweep.results), 'class', 'classes')} ({explored}"
            f"{sweep.count('checked')} clean, {sweep.count('findings')} with findings, {sweep.count('skipped')} "
            f"skipped, {_n(sweep.count('error'), 'error')}); {counts(bugs, 'schedule')}; {sweep.seconds:.1f}s")
    if sweep.abstract:
        text += f"\naliascheck: not concrete, not checked: {', '.join(sweep.abstract)}"
    if sweep.private:
        hidden = _n(len(sweep.private), "private class", "private classes")
        text += f"\naliascheck: {hidden} left out (--include-private)"
    return text


def text(sweep: Sweep, out: IO[str], verbose: bool = False) -> None:
    from .bugs import group
    from .report import block

    for bug in group(f for f in sweep.findings if f.severity != "info"):
        print(block(bug, verbose, noun="schedule") + "\n", file=out)
    print("\n".join(table(sweep)), file=out)
    for r in sweep.results:
        if r.detail and (verbose or r.status == "skipped" or "internal error" in r.reason):
            print(f"\n{r.name}: {r.reason}\n{r.detail.rstrip()}", file=out)
    print("\n" + summary(sweep), file=out)
    for r in sweep.results:
        if r.minimal is not None:
            print(f"\naliascheck: {r.name}: minimal failing schedule: {r.minimal}, built as {r.minimal_built}",
                  file=out)
            print(r.snippet, file=out, end="")


def payload(sweep: Sweep) -> dict[str, Any]:
    from .bugs import group
    from .jsonreport import payload as base

    data = base(sweep.stats, sweep.findings)
    ids = {id(f): bug.id for bug in group(sweep.findings) for f in bug.occurrences}
    classes = []
    for r in sweep.results:
        one = r.to_json()
        one.pop("findings")
        one["bugs"] = list(dict.fromkeys(ids[id(f)] for f in r.findings))
        classes.append(one)
    data.update(target=sweep.target, classes=classes, abstract=sweep.abstract, private=sweep.private,
                explored=sweep.explored, seconds=round(sweep.seconds, 3))
    return data


def jsonformat(sweep: Sweep, out: IO[str], verbose: bool = False) -> None:
    json.dump(payload(sweep), out, indent=2)
    out.write("\n")


def _at_class(sweep: Sweep) -> Callable[[Any], Any]:
    """A bug's fallback location: the definition of the class whose check found it, if in the checkout."""
    from .bugs import Code, in_checkout

    places = {r.name.rpartition(".")[0] + ":" + r.name.rpartition(".")[2]: r for r in sweep.results}

    def where(bug: Any) -> Any:
        spec = (bug.first.test or "").partition(" [")[0]
        r = places.get(spec)
        return in_checkout(Code(r.file, r.line)) if r is not None and r.file else None

    return where


def github(sweep: Sweep, out: IO[str], verbose: bool = False) -> None:
    from .bugs import group
    from .githubreport import _property, lines

    for line in lines([b for b in group(sweep.findings) if b.severity != "info"], _at_class(sweep)):
        print(line, file=out)
    for r in sweep.results:
        if r.status in ("skipped", "error"):
            level = "error" if r.status == "error" else "notice"
            where = f"file={_property(r.file)},line={r.line}," if r.file and not os.path.isabs(r.file) else ""
            print(f"::{level} {where}title={_property(f'aliascheck {r.status}: {r.name}')}::{_property(r.reason)}",
                  file=out)
    print("\n".join(table(sweep)), file=out)
    print(summary(sweep), file=out)


def sarif(sweep: Sweep) -> dict[str, Any]:
    from .bugs import group
    from .sarifreport import sarif as log

    return log([b for b in group(sweep.findings) if b.severity != "info"], _at_class(sweep))


def sarifformat(sweep: Sweep, out: IO[str], verbose: bool = False) -> None:
    json.dump(sarif(sweep), out, indent=2)
    out.write("\n")


FORMATS: dict[str, Callable[[Sweep, IO[str], bool], None]] = {
    "text": text, "json": jsonformat, "github": github, "sarif": sarifformat,
}


def _n(count: int, noun: str, plural: str = "") -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


if __name__ == "__main__":
    child_main()
