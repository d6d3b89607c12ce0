"""The reproducer corpus: real aliasing bugs, each a buggy and a fixed program, and their runner.

An entry is a directory ``corpus/<id>/`` with ``entry.toml`` (metadata and the
expected verdict of each variant) and one plain script per variant
(``buggy.py``, ``fixed.py``, optionally more), each runnable as
``python corpus/<id>/buggy.py`` without aliascheck. ``aliascheck corpus run``
runs every variant under a :class:`~aliascheck.session.Session` in a child
process (:mod:`aliascheck.corpus_child`) and compares what aliascheck found
with what the entry expects.

Verdicts: ``flag`` (an error finding whose owner and path match the entry's
patterns), ``warn`` (warnings only, matching), ``clean`` (no finding at all);
a run can also end in ``error`` (the script raised), ``timeout`` or ``skip``
(an optional framework is not installed). A variant with ``gap = "..."``
documents a detection aliascheck does not make yet: its mismatch is expected
(shown as ``gap``), a match is reported as ``fixed-gap`` and fails the run, so
that the marker gets removed.

Metadata is TOML, read with ``tomllib`` (3.11+) or ``tomli``, which pytest
requires on 3.10, so no extra dependency is needed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import match
from .errors import ExitCode, UsageError
from .kinds import KINDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - pytest depends on tomli for Python < 3.11
    import tomli as tomllib

FAMILIES = ("torchdata", "torch", "cloudpickle", "generic", "messages", "caches", "processes", "boundary")
EXPECTS = ("flag", "warn", "clean")
REQUIRED_VARIANTS = ("buggy", "fixed")
DEFAULT_TIMEOUT = 60.0
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_VARIANT = re.compile(r"^[a-z][a-z0-9_]*$")
_TOP = {"id": str, "title": str, "family": str, "source": str, "affected": str, "summary": str,
        "also": list, "steps": int, "timeout": (int, float), "hook": str, "stateful": list, "requires": list,
        "variants": dict}
_TOP_REQUIRED = ("id", "title", "family", "source", "affected", "summary", "variants")
_EXPECT = {"expect": str, "owner": str, "path": str, "kind": str, "gap": str, "note": str, "file": str}


class CorpusError(UsageError):
    """An entry's metadata is invalid, or an unknown entry was asked for."""


@dataclass(frozen=True, slots=True)
class Expect:
    verdict: str  # flag | warn | clean
    owner: str = ""  # pattern on Finding.owner: * and ? are wildcards, brackets are literal
    path: str = ""  # pattern on Finding.path, the same way
    kind: str = ""  # a Finding kind, or "" for any
    gap: str = ""  # why aliascheck does not reach this verdict yet (a known detection gap)
    note: str = ""

    def pattern(self) -> str:
        return "" if self.verdict == "clean" else f"{self.owner} {self.path}"


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    file: Path  # a script, or a project's directory (its pyproject.toml, src/ package and tests/)
    expect: Expect

    @property
    def project(self) -> bool:
        """A small project run from its own directory with ``python -m pytest --aliascheck``, as users run it."""
        return self.file.is_dir()

    @property
    def shown(self) -> Path:
        """The file that tells the variants apart: the script, or the project's one module under ``src/``."""
        if not self.project:
            return self.file
        modules = sorted(p for p in (self.file / "src").rglob("*.py") if p.name != "__init__.py")
        return modules[0] if modules else self.file / "pyproject.toml"


@dataclass(frozen=True, slots=True)
class Entry:
    id: str
    dir: Path
    title: str
    family: str
    source: str
    affected: str
    summary: str
    variants: dict[str, Variant]
    also: tuple[str, ...] = ()
    steps: int = 0
    timeout: float = DEFAULT_TIMEOUT
    hook: Path | None = None
    stateful: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


# -- loading ------------------------------------------------------------------
def default_dir() -> Path | None:
    """The corpus of the checkout this package is installed from (editable), if there is one."""
    here = Path(__file__).resolve().parent.parent / "corpus"
    return here if here.is_dir() else None


def corpus_dir(given: str | Path | None) -> Path:
    if given is not None:
        path = Path(given)
        if not path.is_dir():
            raise CorpusError(f"--corpus {given}: no such directory")
        return path.resolve()  # the child processes that run the variants start elsewhere
    found = default_dir()
    if found is None:
        raise CorpusError("no corpus directory next to this aliascheck install: pass --corpus DIR "
                          "(the corpus/ directory of an aliascheck checkout)")
    return found


def discover(root: Path) -> list[Entry]:
    """Every entry under *root* (directories with an ``entry.toml``), sorted by id."""
    found = [load_entry(d) for d in sorted(p.parent for p in root.glob("*/entry.toml"))]
    if not found:
        raise CorpusError(f"no entries (*/entry.toml) under {root}")
    return found


def load_entry(directory: str | Path) -> Entry:
    """Read and validate ``entry.toml``; a :class:`CorpusError` names the entry and the field."""
    directory = Path(directory)
    meta = directory / "entry.toml"
    where = f"{directory.name}/entry.toml"
    try:
        data = tomllib.loads(meta.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorpusError(f"{where}: missing") from None
    except tomllib.TOMLDecodeError as exc:
        raise CorpusError(f"{where}: not valid TOML: {exc}") from None
    _check_fields(where, "", data, _TOP, _TOP_REQUIRED)
    if data["id"] != directory.name:
        raise CorpusError(f"{where}: field 'id': {data['id']!r} must equal the directory name {directory.name!r}")
    if not _ID.match(data["id"]):
        raise CorpusError(f"{where}: field 'id': {data['id']!r} must be lowercase letters, digits and dashes")
    if data["family"] not in FAMILIES:
        raise CorpusError(f"{where}: field 'family': must be one of {', '.join(FAMILIES)}, not {data['family']!r}")
    for name in ("source", *(f"also[{i}]" for i in range(len(data.get("also", []))))):
        url = data["source"] if name == "source" else data["also"][int(name[5:-1])]
        if not (isinstance(url, str) and url.startswith("https://")):
            raise CorpusError(f"{where}: field {name!r}: must be an https:// URL, not {url!r}")
    _check_number(where, "steps", data.get("steps", 0), 0)
    _check_number(where, "timeout", data.get("timeout", DEFAULT_TIMEOUT), 1)
    for name in ("stateful", "requires"):
        if not all(isinstance(s, str) for s in data.get(name, [])):
            raise CorpusError(f"{where}: field {name!r}: must be a list of strings")
    for spec in data.get("stateful", []):
        module, _, qualname = spec.partition(":")
        if not module or not qualname:
            raise CorpusError(f"{where}: field 'stateful': {spec!r} is not of the form module:Qualname "
                              "(__main__:Name for a class the variant defines)")
    hook = None
    if "hook" in data:
        hook = directory / data["hook"]
        if not hook.is_file():
            raise CorpusError(f"{where}: field 'hook': {data['hook']!r} does not exist")
    return Entry(
        id=data["id"], dir=directory, title=data["title"], family=data["family"], source=data["source"],
        affected=data["affected"], summary=data["summary"].strip(), variants=_variants(where, directory, data),
        also=tuple(data.get("also", ())), steps=data.get("steps", 0),
        timeout=float(data.get("timeout", DEFAULT_TIMEOUT)), hook=hook,
        stateful=tuple(data.get("stateful", ())), requires=tuple(data.get("requires", ())),
    )


def _variants(where: str, directory: Path, data: dict[str, Any]) -> dict[str, Variant]:
    tables = data["variants"]
    missing = [v for v in REQUIRED_VARIANTS if v not in tables]
    if missing:
        raise CorpusError(f"{where}: field 'variants.{missing[0]}': missing (every entry has buggy and fixed)")
    out = {}
    for name in [*REQUIRED_VARIANTS, *(n for n in tables if n not in REQUIRED_VARIANTS)]:
        prefix = f"variants.{name}"
        if not _VARIANT.match(name):
            raise CorpusError(f"{where}: field {prefix!r}: a variant name is lowercase letters, digits and _")
        table = tables[name]
        if not isinstance(table, dict):
            raise CorpusError(f"{where}: field {prefix!r}: must be a table")
        _check_fields(where, prefix + ".", table, _EXPECT, ("expect",))
        expect = Expect(table["expect"], table.get("owner", ""), table.get("path", ""), table.get("kind", ""),
                        table.get("gap", ""), table.get("note", ""))
        _check_expect(where, prefix, expect)
        script = directory / table.get("file", f"{name}.py")
        if "file" not in table and not script.exists() and (directory / name / "pyproject.toml").is_file():
            script = directory / name  # a project variant: corpus/<id>/<variant>/pyproject.toml
        if not (script.is_file() or (script.is_dir() and (script / "pyproject.toml").is_file())):
            raise CorpusError(f"{where}: field {prefix}.file: {script.name} does not exist (a script, or a "
                              "project directory with a pyproject.toml)")
        out[name] = Variant(name, script, expect)
    return out


def _check_fields(where: str, prefix: str, data: dict[str, Any], types: dict[str, Any],
                  required: Iterable[str]) -> None:
    for key, value in data.items():
        if key not in types:
            raise CorpusError(f"{where}: field {prefix + key!r}: unknown (known: {', '.join(types)})")
        if isinstance(value, bool) or not isinstance(value, types[key]):
            want = types[key].__name__ if isinstance(types[key], type) else "a number"
            raise CorpusError(f"{where}: field {prefix + key!r}: must be {want}, not {type(value).__name__}")
    for key in required:
        if key not in data:
            raise CorpusError(f"{where}: field {prefix + key!r}: missing")


def _check_number(where: str, name: str, value: float, minimum: float) -> None:
    if value < minimum:
        raise CorpusError(f"{where}: field {name!r}: must be >= {minimum}, not {value}")


def _check_expect(where: str, prefix: str, expect: Expect) -> None:
    if expect.verdict not in EXPECTS:
        raise CorpusError(f"{where}: field '{prefix}.expect': must be one of {', '.join(EXPECTS)}, "
                          f"not {expect.verdict!r}")
    if expect.verdict == "clean" and (expect.owner or expect.path or expect.kind):
        raise CorpusError(f"{where}: field '{prefix}.owner': a clean verdict names no owner, path or kind")
    if expect.verdict != "clean":
        for name in ("owner", "path"):
            if not getattr(expect, name):
                raise CorpusError(f"{where}: field '{prefix}.{name}': missing (a {expect.verdict} verdict "
                                  "names the owner and path it expects)")
    if expect.kind and expect.kind not in KINDS:
        raise CorpusError(f"{where}: field '{prefix}.kind': must be one of {', '.join(KINDS)}, not {expect.kind!r}")


def select(entries: Sequence[Entry], ids: Sequence[str] = (), family: str | None = None) -> list[Entry]:
    """The entries named (all if none), of *family* if given; an unknown id or family is a CorpusError."""
    if family is not None and family not in FAMILIES:
        raise CorpusError(f"unknown family {family!r} (known: {', '.join(FAMILIES)})")
    by_id = {e.id: e for e in entries}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise CorpusError(f"unknown entry id {unknown[0]!r} (see: aliascheck corpus list)")
    chosen = [by_id[i] for i in dict.fromkeys(ids)] if ids else list(entries)
    return [e for e in chosen if family is None or e.family == family]


# -- verdicts -----------------------------------------------------------------
@dataclass
class Result:
    """One variant's run, judged against its entry."""

    entry: str
    variant: str
    expected: str  # flag | warn | clean
    pattern: str  # the owner and path a flag or warn must name
    got: str  # flag | warn | clean | error | timeout | skip
    status: str  # ok | mismatch | gap | fixed-gap | skip
    findings: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    detail: str = ""  # the matching finding's owner and path, or why the run failed
    threads: list[str] = field(default_factory=list)  # threads the variant left running

    @property
    def passed(self) -> bool:
        return self.status in ("ok", "gap", "skip")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.entry, "variant": self.variant, "expected": self.expected, "pattern": self.pattern,
                "got": self.got, "status": self.status, "findings": self.findings,
                "seconds": round(self.seconds, 3), "detail": self.detail, "threads": self.threads}


def _matches(expect: Expect, finding: dict[str, Any]) -> bool:
    return ((not expect.kind or finding["kind"] == expect.kind)
            and match(finding["owner"], expect.owner) and match(finding["path"], expect.path))


def judge(entry: Entry, variant: Variant, outcome: dict[str, Any]) -> Result:
    """Turn the child's *outcome* for one variant into a :class:`Result`."""
    expect = variant.expect
    findings = outcome.get("findings", [])
    state = outcome.get("state", "error")
    detail = outcome.get("error", "")
    if state == "ok":
        errors = [f for f in findings if f["severity"] == "error"]
        got = "flag" if errors else "warn" if findings else "clean"
        relevant = errors if got == "flag" else findings
        hit = next((f for f in relevant if _matches(expect, f)), None) if expect.verdict == got else None
        shown = hit or (relevant[0] if relevant else None)
        detail = f"{shown['owner']} {shown['path']}" if shown else ""
        matched = got == expect.verdict and (got == "clean" or hit is not None)
    else:
        got, matched = state, False
    threads = list(outcome.get("threads", []))
    if state == "skip":
        status = "skip"
    elif threads or state != "ok":  # every thread a variant starts must be joined; a gap is no excuse to crash
        status = "mismatch"
    elif expect.gap:
        status = "fixed-gap" if matched else "gap"
    else:
        status = "ok" if matched else "mismatch"
    return Result(entry.id, variant.name, expect.verdict, expect.pattern(), got, status, findings,
                  float(outcome.get("seconds", 0.0)), detail, threads)


# -- running ------------------------------------------------------------------
# What a child pays before its first variant (interpreter, imports, torch.optim's
# first use), measured on a 2-core machine; used only to start the longest batches first.
STARTUP = {"torch": 4.0, "torchdata": 2.5, "generic": 2.0, "cloudpickle": 0.5, "messages": 1.0, "caches": 0.5,
           "processes": 3.0, "boundary": 3.0}  # boundary: most of its variants import torch
BATCH = 6  # variants of one family per child at most
Job = tuple[Entry, Variant]


def plan(entries: Sequence[Entry], isolate: bool = False) -> list[list[Job]]:
    """Batches of jobs, one child each: a family's variants share a child (their imports
    are paid once), split evenly into batches of at most BATCH, the costliest first."""
    families: dict[str, list[Job]] = {}
    for entry in entries:
        families.setdefault(entry.family, []).extend((entry, v) for v in entry.variants.values())
    batches: list[list[Job]] = []
    for jobs in families.values():
        size = 1 if isolate else -(-len(jobs) // -(-len(jobs) // BATCH))
        batches += [jobs[i:i + size] for i in range(0, len(jobs), size)]
    return sorted(batches, key=lambda b: -(STARTUP[b[0][0].family] + 0.5 * len(b)))


def run(entries: Sequence[Entry], workers: int = 1, timeout: float | None = None, isolate: bool = False,
        progress: Callable[[str], None] | None = None) -> list[Result]:
    """Run every variant of *entries* in child processes, *workers* at a time; results in entry order."""
    batches = plan(entries, isolate)
    total = sum(len(b) for b in batches)
    results: dict[tuple[str, str], Result] = {}
    lock = threading.Lock()

    def done(result: Result) -> None:
        with lock:
            results[(result.entry, result.variant)] = result
            if progress is not None:
                mark = "" if result.status in ("ok", "skip") else f" [{result.status}]"
                progress(f"corpus: [{len(results):>{len(str(total))}}/{total}] {result.entry} {result.variant}: "
                         f"{result.got}{mark} ({result.seconds:.2f} s)")

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="corpus") as pool:
        for future in [pool.submit(_run_batch, batch, timeout, done) for batch in batches]:
            future.result()
    return [results[(e.id, v)] for e in entries for v in e.variants]


def run_one(entry: Entry, variant: Variant, timeout: float | None = None) -> Result:
    """Run one variant in a child process of its own (what each ``pytest corpus/`` item does)."""
    ((_, outcome),) = list(_child([(entry, variant)], timeout))
    return judge(entry, variant, outcome)


def _run_batch(batch: list[Job], timeout: float | None, done: Callable[[Result], None]) -> None:
    pending = list(batch)
    while pending:  # a child that timed out or died is replaced for the jobs left
        for (entry, variant), outcome in _child(list(pending), timeout):
            done(judge(entry, variant, outcome))
            pending.pop(0)


def _child(jobs: list[Job], timeout: float | None) -> Iterable[tuple[Job, dict[str, Any]]]:
    """Yield each job's outcome as the child reports it; on a timeout or a crash, that job's
    outcome says so and the child is gone (the caller starts another for the rest)."""
    args = [sys.executable, "-m", "aliascheck.corpus_child"]
    for entry, variant in jobs:
        args += [str(entry.dir), variant.name]
    with tempfile.TemporaryFile() as stderr:
        # Its own process group: a timeout stops the child and whatever it started.
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, cwd=jobs[0][0].dir.parent,
                                text=True, encoding="utf-8", start_new_session=os.name == "posix")
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_read, args=(proc.stdout, lines), name="corpus-reader", daemon=True)
        reader.start()
        try:
            for job in jobs:
                limit = timeout or job[0].timeout
                start = time.monotonic()
                try:
                    line = lines.get(timeout=limit)
                except queue.Empty:
                    _kill(proc)
                    yield job, {"state": "timeout", "error": f"no verdict within {limit:g} s",
                                "seconds": time.monotonic() - start}
                    return
                if line is None:  # the child died without a verdict for this job
                    proc.wait()
                    yield job, {"state": "error", "seconds": time.monotonic() - start,
                                "error": f"the child process exited with {proc.returncode}: " + _tail(stderr)}
                    return
                try:
                    yield job, json.loads(line)
                except json.JSONDecodeError:
                    _kill(proc)
                    yield job, {"state": "error", "error": f"aliascheck: unreadable verdict {line[:200]!r}"}
                    return
            try:
                proc.wait(timeout=30)  # let it exit on its own (atexit handlers, coverage data)
            except subprocess.TimeoutExpired:
                pass
        finally:
            _kill(proc)
            reader.join()
            if proc.stdout is not None:
                proc.stdout.close()


def _read(stream: Any, lines: Any) -> None:
    for line in stream:
        if line.strip():
            lines.put(line)
    lines.put(None)


def _kill(proc: Any) -> None:
    if proc.poll() is None:
        try:
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)  # our own child's group, by its id
            else:  # pragma: no cover
                proc.kill()
        except ProcessLookupError:  # it exited meanwhile
            pass
    proc.wait()


def _tail(stream: Any, lines: int = 12) -> str:
    stream.seek(0)
    text = stream.read().decode("utf-8", errors="replace").strip().splitlines()
    return "\n".join(text[-lines:]) or "(no output)"


# -- output -------------------------------------------------------------------
def table(results: Sequence[Result]) -> str:
    rows = [("entry", "variant", "expected", "got", "owner/path found", "seconds", "")]
    marks = {"ok": "", "mismatch": "MISMATCH", "gap": "known gap", "fixed-gap": "GAP CLOSED: remove the gap",
             "skip": "skipped"}
    for r in results:
        mark = marks[r.status]
        if r.status == "mismatch" and r.pattern:
            mark += f": wanted {r.pattern}"
        if r.threads:
            mark += f" (left running: {', '.join(r.threads)})"
        rows.append((r.entry, r.variant, r.expected, r.got, _short(r.detail, 60), f"{r.seconds:.2f}", mark))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths).rstrip())
    lines.append(summary(results))
    return "\n".join(lines)


def summary(results: Sequence[Result]) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "mismatch", "gap", "fixed-gap", "skip")}
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    return f"corpus: {len(results)} variants: {', '.join(parts) or 'none run'}"


def payload(results: Sequence[Result]) -> dict[str, Any]:
    return {"version": 1, "entries": [r.to_json() for r in results]}


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def show(entry: Entry) -> str:
    lines = [f"{entry.id}: {entry.title}", f"family:   {entry.family}", f"source:   {entry.source}"]
    lines += [f"          {url}" for url in entry.also]
    lines += [f"affected: {entry.affected}", "", entry.summary, ""]
    for v in entry.variants.values():
        shown = v.shown.relative_to(entry.dir) if v.project else v.file.name
        lines.append(f"== {v.name} ({shown}): expected {v.expect.verdict} {v.expect.pattern()}".rstrip()
                     + (f"  [gap: {v.expect.gap}]" if v.expect.gap else ""))
        if v.expect.note:
            lines.append(f"   note: {v.expect.note}")
        lines += ["", v.shown.read_text(encoding="utf-8").rstrip(), ""]
    return "\n".join(lines)


def listing(entries: Sequence[Entry]) -> str:
    width = max((len(e.id) for e in entries), default=2)
    return "\n".join(f"{e.id.ljust(width)}  {e.family:<11}  {e.title}" for e in entries)


# -- command line -------------------------------------------------------------
def add_subcommand(subparsers: Any) -> Any:
    """Register ``corpus run|list|show`` on an argparse subparsers object; returns the parser."""
    parser = subparsers.add_parser("corpus", help="run the reproducer corpus of real aliasing bugs",
                                   description="Run, list or show the reproducer corpus.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--corpus", metavar="DIR", default=None,
                        help="the corpus directory (default: corpus/ of the checkout aliascheck is installed from)")
    commands = parser.add_subparsers(dest="corpus_command", metavar="ACTION")
    run_p = commands.add_parser("run", parents=[common], help="run entries and check every verdict")
    run_p.add_argument("ids", nargs="*", metavar="ID", help="entries to run (default: all)")
    run_p.add_argument("--family", choices=FAMILIES, default=None, help="only entries of this family")
    run_p.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    run_p.add_argument("-n", "--workers", type=_positive, default=1, metavar="N",
                       help="run variants in N parallel child processes")
    run_p.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="seconds each variant may take (default: the entry's, 60)")
    run_p.add_argument("--isolate", action="store_true",
                       help="one process per variant (default: variants of a family share a process)")
    commands.add_parser("list", parents=[common], help="list the entries")
    show_p = commands.add_parser("show", parents=[common], help="show an entry's metadata and code")
    show_p.add_argument("id", metavar="ID")
    parser.set_defaults(run=handle, corpus_parser=parser)  # cli.main calls args.run(args)
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {value}")
    return value


def handle(args: Any, out: Callable[[str], None] | None = None) -> int:
    """Run ``aliascheck corpus ...``; returns an :class:`~aliascheck.errors.ExitCode`.

    Errors are the command line's to report (``aliascheck.cli.main``, the one handler).
    """
    write = out or (lambda text: print(text, file=sys.stdout, flush=True))
    if getattr(args, "corpus_command", None) is None:
        args.corpus_parser.print_help(sys.stderr)
        return ExitCode.USAGE_ERROR
    entries = discover(corpus_dir(args.corpus))
    if args.corpus_command == "list":
        write(listing(entries))
        return ExitCode.OK
    if args.corpus_command == "show":
        write(show(select(entries, [args.id])[0]))
        return ExitCode.OK
    chosen = select(entries, args.ids, args.family)
    if not chosen:
        raise CorpusError(f"no entry of family {args.family!r} among those named")
    results = run(chosen, workers=args.workers, timeout=args.timeout, isolate=args.isolate,
                  progress=lambda text: print(text, file=sys.stderr, flush=True))
    write(json.dumps(payload(results), indent=2) if args.format == "json" else table(results))
    return ExitCode.OK if all(r.passed for r in results) else ExitCode.FINDINGS
