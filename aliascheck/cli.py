"""The ``aliascheck`` command line.

Each subcommand is one ``add_<name>(subparsers)`` function in ``SUBCOMMANDS``
that registers its parser and sets ``run`` to the function doing the work;
``main`` maps what that raises to an :class:`ExitCode`. The heavy parts (the
session, torch via the user's module, Hypothesis) load only when a subcommand
runs, so ``aliascheck --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from . import __version__
from .corpus import add_subcommand as add_corpus
from .errors import ExitCode
from .reproducer import snippet

if TYPE_CHECKING:
    from .bugs import Bug, Code
    from .check import Outcome, Target

__all__ = ["ExitCode", "main"]


# -- aliascheck check -------------------------------------------------------
def add_check(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check", help="check node classes (or a node factory) for snapshot aliasing and resume errors (the CI gate)",
        description="Build fresh nodes, hand their state over at several steps, step them on, re-verify every "
                    "snapshot and restore fresh nodes from each one. PACKAGE: every node class it defines, built "
                    "from its signature; MODULE:FACTORY: the nodes that callable returns. Exit 0 clean, 1 findings, "
                    "2 usage error, 3 internal error.",
    )
    parser.add_argument("target", metavar="TARGET",
                        help="PACKAGE or MODULE (every node class in it), or MODULE:FACTORY (a callable returning "
                             "a fresh torchdata node, Loader or Stateful iterator)")
    parser.add_argument("--format", choices=tuple(FORMATS), default="text",
                        help="text (default), json, github (workflow annotations) or sarif (SARIF 2.1.0)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every occurrence under its bug")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--explore", metavar="N", type=_positive, default=None,
                     help="search N schedules with Hypothesis and shrink a failure to the smallest")
    how.add_argument("--schedule", metavar="SPEC", default=None,
                     help='run one schedule, as the explore report prints it: "snap=0,2 ahead=3 prefetch_factor=1"')
    parser.add_argument("--steps", type=int, default=4,
                        help="items stepped past the last snapshot in the default schedules (default 4)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds one stepping may take (default 30)")
    parser.add_argument("--strict", action="store_true", help="treat aliases that did not change as findings too")
    parser.add_argument("--ignore", action="append", default=[], metavar="PATTERN",
                        help="never report paths matching PATTERN (fnmatch; 'Owner:path' or path); repeatable")
    parser.add_argument("--report", metavar="PATH", default=None, help="also write the JSON report to PATH")
    parser.add_argument("--sarif", metavar="PATH", default=None, help="also write a SARIF 2.1.0 log to PATH")
    sweep = parser.add_argument_group("PACKAGE (a sweep of every node class)")
    sweep.add_argument("--include-private", action="store_true", help="check classes named with a leading underscore")
    sweep.add_argument("--only", action="append", default=[], metavar="PATTERN",
                       help="check only classes matching PATTERN (fnmatch on module.Class or Class); repeatable")
    sweep.add_argument("--workers", type=_positive, default=1, metavar="N",
                       help="check classes in N child processes (default 1: in this process)")
    parser.set_defaults(run=run_check)


def run_check(args: argparse.Namespace) -> ExitCode:
    from . import check
    from .config import Options

    options = Options(enabled=True, steps=args.steps, strict=args.strict, ignore=tuple(args.ignore),
                      step_timeout=args.timeout)
    if ":" not in args.target:
        return run_sweep(args, options)
    with check.cwd_importable():
        target = check.load(args.target)
        if args.explore is not None:
            outcome = check.explore(target, options, args.explore)
        else:
            plan = ([check.Schedule.parse(args.schedule, target.knobs)] if args.schedule
                    else check.default_schedules(target, options.steps))
            outcome = check.check(target, options, plan)
    FORMATS[args.format](outcome, sys.stdout, args.verbose)
    for path, make in ((args.report, payload), (args.sarif, sarif)):
        if path:
            write_json(path, make(outcome))
    return ExitCode.FINDINGS if outcome.errors else ExitCode.OK


def run_sweep(args: argparse.Namespace, options: Any) -> ExitCode:
    from . import check, config, sweep

    with check.cwd_importable():
        done = sweep.sweep(args.target, options, explore=args.explore, schedule=args.schedule,
                           include_private=args.include_private, only=tuple(args.only), workers=args.workers,
                           factories=config.factories())
    sweep.FORMATS[args.format](done, sys.stdout, args.verbose)
    for path, make in ((args.report, sweep.payload), (args.sarif, sweep.sarif)):
        if path:
            write_json(path, make(done))
    if any("internal error" in r.reason for r in done.results if r.status == "error"):
        return ExitCode.INTERNAL_ERROR
    failed = done.count("findings") + done.count("error") + (done.count("skipped") if args.strict else 0)
    return ExitCode.FINDINGS if failed else ExitCode.OK


def write_json(path: str, data: Any) -> bool:
    """Write a report; an unwritable path is one error line, and the run's outcome stands."""
    from .jsonreport import write

    try:
        write(path, data)
    except OSError as exc:
        print(f"aliascheck: error: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return False
    return True


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


# -- output formats ---------------------------------------------------------
def summary(outcome: Outcome) -> list[str]:
    from .bugs import counts, group

    stats = outcome.stats
    bugs = group(outcome.findings)
    errors = [b for b in bugs if b.severity == "error"]
    warnings = sum(b.severity == "warning" for b in bugs)
    ran, failing = len(set(outcome.ran)), len(set(outcome.failing))
    lines = [
        f"aliascheck check {outcome.target.spec}: {'explored ' if outcome.explored else ''}{_n(ran, 'schedule')}, "
        f"{failing} with findings; {stats.handovers} handovers recorded, {stats.checked} checked; "
        f"{counts(errors, 'schedule')}, {_n(warnings, 'warning')}",
    ]
    if outcome.minimal is not None:
        lines.append(f"aliascheck: minimal failing schedule: {outcome.minimal}")
    elif outcome.failing:
        lines.append(f"aliascheck: first failing schedule: {outcome.failing[0]}")
    return lines


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _bugs(outcome: Outcome) -> list[Bug]:
    from .bugs import group

    return group(f for f in outcome.findings if f.severity != "info")


def text(outcome: Outcome, out: IO[str], verbose: bool = False) -> None:
    from .report import block

    for bug in _bugs(outcome):
        print(block(bug, verbose, noun="schedule") + "\n", file=out)
    print("\n".join(summary(outcome)), file=out)
    if outcome.minimal is not None:
        print("\n" + _snippet(outcome), file=out, end="")


def payload(outcome: Outcome) -> dict[str, Any]:
    from .jsonreport import payload as base

    data = base(outcome.stats, outcome.findings)
    data.update(
        target=outcome.target.spec,
        schedules=list(dict.fromkeys(str(s) for s in outcome.ran)),
        failing=list(dict.fromkeys(str(s) for s in outcome.failing)),
        minimal=None if outcome.minimal is None else str(outcome.minimal),
        snippet=None if outcome.minimal is None else _snippet(outcome),
    )
    return data


def jsonformat(outcome: Outcome, out: IO[str], verbose: bool = False) -> None:
    json.dump(payload(outcome), out, indent=2)
    out.write("\n")


def github(outcome: Outcome, out: IO[str], verbose: bool = False) -> None:
    """One workflow annotation per bug, at the user's line if it is in the checkout, else at the factory."""
    from .githubreport import lines as annotations

    for line in annotations(_bugs(outcome), _at_factory(outcome.target)):
        print(line, file=out)
    print("\n".join(summary(outcome)), file=out)
    if outcome.minimal is not None:
        print("\n" + _snippet(outcome), file=out, end="")


def sarif(outcome: Outcome) -> dict[str, Any]:
    from .sarifreport import sarif as log

    return log(_bugs(outcome), _at_factory(outcome.target))


def sarifformat(outcome: Outcome, out: IO[str], verbose: bool = False) -> None:
    json.dump(sarif(outcome), out, indent=2)
    out.write("\n")


def _at_factory(target: Target) -> Callable[[Bug], Code | None]:
    from .bugs import Code, in_checkout

    factory = in_checkout(Code(target.file, target.line)) if target.file else None
    return lambda bug: factory


def _snippet(outcome: Outcome) -> str:
    assert outcome.minimal is not None
    return snippet(outcome.target, outcome.minimal)


FORMATS: dict[str, Callable[[Outcome, IO[str], bool], None]] = {
    "text": text, "json": jsonformat, "github": github, "sarif": sarifformat,
}

# One entry per subcommand; ``aliascheck corpus`` adds its own add_corpus here.
SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (add_check, add_corpus)


# -- the entry point ----------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aliascheck",
        description="Find handed-over state (state_dict(), pickled classes) that silently changes afterwards.",
    )
    parser.add_argument("--version", action="version", version=f"aliascheck {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a bad flag (argparse has said why)
        return exc.code if isinstance(exc.code, int) else ExitCode.USAGE_ERROR
    if args.command is None:
        parser.print_help(sys.stdout)
        return ExitCode.OK
    from .errors import HarnessError, UsageError

    name = f"aliascheck {args.command}"
    try:
        return int(args.run(args))
    except UsageError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    except BrokenPipeError:  # `aliascheck ... | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK
    except HarnessError as exc:  # the code under check raised (or hung): its traceback, then what we were doing
        if exc.__cause__ is not None:
            traceback.print_exception(type(exc.__cause__), exc.__cause__, exc.__cause__.__traceback__)
        print(f"{name}: {exc}", file=sys.stderr)
        return ExitCode.FINDINGS
    except Exception:
        traceback.print_exc()
        print(f"{name}: internal error: this is a bug in aliascheck {__version__}, "
              "please report it with the traceback above", file=sys.stderr)
        return ExitCode.INTERNAL_ERROR
