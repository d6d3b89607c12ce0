"""The ``aliascheck`` command line."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aliascheck",
        description="Find handed-over state (state_dict(), pickled classes) that silently changes afterwards.",
    )
    parser.add_argument("--version", action="version", version=f"aliascheck {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stdout)
    return 0
