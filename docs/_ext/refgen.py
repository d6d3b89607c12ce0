"""The reference pages' text, made from the code that defines each thing: nothing here is typed twice.

Each ``*_rst()`` function returns reStructuredText lines for one section of the
reference; the Sphinx extension ``aliascheck_reference`` puts them where a page says
``.. aliascheck-reference:: NAME``. This module imports no Sphinx, so the tests can
check what it makes (``tests/test_docs_reference.py``).

- pytest options and ini keys: ``aliascheck.pytest_plugin.pytest_addoption`` run against
  a parser that records each call (:class:`Recorder`);
- markers: ``pytest_configure`` run against a config that records
  ``addinivalue_line("markers", ...)`` and stops at anything else (the plugin registers
  its markers before it reads any setting);
- the ``aliascheck`` fixture: its docstring and those of the helper it yields;
- finding kinds, checks and message channels: ``aliascheck.kinds``;
- the fields of a finding: ``aliascheck.findings.Finding``;
- the bundled adapters: ``aliascheck.adapters.BUNDLED``;
- the command line: ``aliascheck.cli.build_parser()`` and ``aliascheck.errors.ExitCode``;
- the corpus: every ``corpus/*/entry.toml``, through ``aliascheck.corpus``.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import re
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


# -- pytest: what the plugin registers --------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    dest: str
    help: str
    default: Any = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    type: str | None = None  # the converter's name: "int"
    action: str | None = None


@dataclasses.dataclass(frozen=True)
class Ini:
    name: str
    help: str
    type: str | None = None
    default: Any = None


class _Group:
    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def addoption(self, *names: str, **attrs: Any) -> None:
        self._recorder.flag(names, attrs)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"docs/_ext/refgen.py: pytest_addoption calls group.{name}(), which the reference "
                             "generator does not record: teach Recorder about it")


class Recorder:
    """A stand-in for pytest's ``Parser`` that records the calls ``pytest_addoption`` makes."""

    def __init__(self) -> None:
        self.flags: list[Flag] = []
        self.inis: list[Ini] = []

    def getgroup(self, name: str, description: str = "", after: str | None = None) -> _Group:
        return _Group(self)

    def addoption(self, *names: str, **attrs: Any) -> None:
        self.flag(names, attrs)

    def addini(self, name: str, help: str, type: str | None = None, default: Any = None, **_: Any) -> None:
        self.inis.append(Ini(name, help, type, default))

    def flag(self, names: tuple[str, ...], attrs: dict[str, Any]) -> None:
        unknown = set(attrs) - {"action", "dest", "type", "default", "choices", "metavar", "help"}
        if unknown:
            raise TypeError(f"docs/_ext/refgen.py: addoption{names} uses {sorted(unknown)}: teach Recorder about it")
        kind = attrs.get("type")
        choices = attrs.get("choices")
        self.flags.append(Flag(
            names=tuple(names),
            dest=attrs.get("dest") or names[0].lstrip("-").replace("-", "_"),
            help=attrs.get("help", ""),
            default=attrs.get("default"),
            choices=tuple(choices) if choices is not None else None,
            metavar=attrs.get("metavar"),
            type=getattr(kind, "__name__", kind),
            action=attrs.get("action"),
        ))

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"docs/_ext/refgen.py: pytest_addoption calls parser.{name}(), which the reference "
                             "generator does not record: teach Recorder about it")


class _Stop(Exception):
    """pytest_configure went past registering its markers."""


class _MarkerConfig:
    def __init__(self) -> None:
        self.markers: list[str] = []

    def addinivalue_line(self, name: str, line: str) -> None:
        if name != "markers":
            raise _Stop
        self.markers.append(line)

    def __getattr__(self, name: str) -> Any:
        raise _Stop


def pytest_options() -> tuple[list[Flag], list[Ini]]:
    """Every option and ini key, in the order ``pytest_addoption`` adds them."""
    from aliascheck.pytest_plugin import pytest_addoption

    recorder = Recorder()
    pytest_addoption(recorder)  # type: ignore[arg-type]
    return recorder.flags, recorder.inis


def markers() -> list[tuple[str, str]]:
    """``(signature, description)`` of each marker, from ``pytest_configure``."""
    from aliascheck.pytest_plugin import pytest_configure

    config = _MarkerConfig()
    try:
        pytest_configure(config)  # type: ignore[arg-type]
    except _Stop:
        pass
    return [(line.partition(":")[0].strip(), line.partition(":")[2].strip()) for line in config.markers]


def _literal(value: Any) -> str:
    return f"``{value!r}``" if not isinstance(value, str) else f"``{value}``" if value else "``''``"


def _text(text: str) -> str:
    """Plain text (a help string, a kind's help, a corpus summary) as one line of reST, its ``--flags``
    as literals: ``*``, backquotes, ``|``, ``_`` and backslashes are escaped, they are not markup here."""
    return _FLAG.sub(r"``\1``", _SPECIAL.sub(r"\\\1", " ".join(text.split())))


def _doc(text: str) -> str:
    """A docstring (reST already): cross-reference roles become literals, as the targets are not documented."""
    return _ROLE.sub(r"``\1``", text)


_SPECIAL = re.compile(r"([\\*`|_])")
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


_FLAG = re.compile(r"(?<![`\w-])(--[a-z][a-z-]*)")


def options_rst() -> list[str]:
    flags, inis = pytest_options()
    ini_names = {i.name for i in inis}
    lines = [".. program:: pytest", ""]
    for flag in flags:
        shown = ", ".join(flag.names)
        if flag.action not in ("store_true", "store_false"):
            shown += " " + (flag.metavar or ("{" + ",".join(flag.choices) + "}" if flag.choices else flag.dest.upper()))
        lines += [f".. option:: {shown}", "", f"   {_text(flag.help)}", ""]
        facts = []
        if flag.choices:
            facts.append("choices: " + ", ".join(f"``{c}``" for c in flag.choices))
        if flag.type:
            facts.append(f"type: ``{flag.type}``")
        if flag.dest in ini_names:
            facts.append(f"ini twin: :confval:`{flag.dest}`")
        else:
            facts.append("no ini twin")
        lines += [f"   {'; '.join(facts)}.", ""]
    return lines


def ini_rst() -> list[str]:
    flags, inis = pytest_options()
    by_dest = {f.dest: f for f in flags}
    lines = []
    for ini in inis:
        lines += [f".. confval:: {ini.name}", f"   :type: ``{ini.type or 'string'}``",
                  f"   :default: {_literal(ini.default)}", "", f"   {_text(ini.help)}", ""]
        flag = by_dest.get(ini.name)
        if flag is None:
            pass
        elif flag.action == "store_true":
            lines += [f"   It or :option:`pytest {flag.names[0]}` turns it on.", ""]
        else:
            lines += [f"   :option:`pytest {flag.names[0]}`, when given, wins over it.", ""]
    return lines


def markers_rst() -> list[str]:
    lines = []
    for signature, description in markers():
        lines += [f"``@pytest.mark.{signature}``", f"   {_text(description)}", ""]
    return lines


def fixture_rst() -> list[str]:
    from aliascheck import pytest_plugin

    fixture = pytest_plugin.aliascheck
    doc = inspect.getdoc(fixture) or ""
    lines = ["``aliascheck`` (function scope)", f"   {_doc(' '.join(doc.split()))}", ""]
    helper = pytest_plugin.Helper
    lines += [f"   It yields a ``{helper.__name__}``: {_doc(inspect.getdoc(helper) or '')}", ""]
    for name, member in vars(helper).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            lines += [f"   ``.{name}``", f"      {_doc(inspect.getdoc(member) or 'the findings so far')}", ""]
        else:
            signature = inspect.signature(member)
            signature = signature.replace(parameters=[p.replace(annotation=p.empty) for p in
                                                      list(signature.parameters.values())[1:]],
                                          return_annotation=signature.empty)
            lines += [f"   ``.{name}{signature}``", f"      {_doc(inspect.getdoc(member) or '')}", ""]
    return lines


# -- finding kinds, checks, channels, the finding's fields --------------------------------------
def kinds_rst() -> list[str]:
    from aliascheck.kinds import KINDS

    lines = []
    for kind in KINDS.values():
        heading = f"``{kind.slug}``"
        lines += [f".. _kind-{kind.slug}:", "", heading, "^" * len(heading), "",
                  f"**{kind.title}** (default severity: {kind.severity})", "", _text(kind.help), "",
                  f"*Fix:* {_text(kind.hint)}", ""]
    return lines


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in (header, *rows):
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {cell}" for cell in row[1:]]
    return [*lines, ""]


def checks_rst() -> list[str]:
    from aliascheck.kinds import CHECKS

    return _table(("check", "when it looked"), [(f"``{name}``", _text(phrase)) for name, phrase in CHECKS.items()])


def channels_rst() -> list[str]:
    from aliascheck.kinds import CHANNELS

    return _table(("channel", "handover", "fix"),
                  [(f"``{name}``", f"``{verb}``", _text(fix)) for name, (verb, fix) in CHANNELS.items()])


def finding_fields_rst() -> list[str]:
    from aliascheck.findings import Finding

    rows = []
    for field in dataclasses.fields(Finding):
        default = field.default if field.default is not dataclasses.MISSING else None
        rows.append((f"``{field.name}``", f"``{field.type}``", "required" if default is None and
                     field.default_factory is dataclasses.MISSING else _literal(default) if default is not None
                     else "``[]``"))
    return _table(("field", "type", "default"), rows)


def adapters_rst() -> list[str]:
    from aliascheck.adapters import BUNDLED, PARENT_ONLY

    rows = [(f"``{name}``", f"``{module}``", f"``{requires}``" if requires else "nothing (always)",
             "no" if name in PARENT_ONLY else "yes") for name, (module, requires) in BUNDLED.items()]
    return _table(("name", "module", "installed once this is imported", "in child processes"), rows)


def hooks_rst() -> list[str]:
    """The adapter contract: each hook spec of ``aliascheck.hookspecs``, its signature and docstring."""
    import aliascheck.hookspecs as hookspecs

    lines = []
    for name, fn in vars(hookspecs).items():
        spec = getattr(fn, "aliascheck_spec", None)
        if not name.startswith("aliascheck_") or spec is None:
            continue
        signature = inspect.signature(fn)
        shown = ", ".join(signature.parameters)
        lines += [f"``{name}({shown})``" + (" (first result wins)" if spec.get("firstresult") else "")]
        doc = _doc(inspect.getdoc(fn) or "")
        lines += ["   " + line if line else "" for line in doc.splitlines()]
        lines.append("")
    return lines



# -- the command line ---------------------------------------------------------------------------
def _subparsers(parser: argparse.ArgumentParser, prefix: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:  # argparse has no public way to list subcommands
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix} {name}", sub
                yield from _subparsers(sub, f"{prefix} {name}")


def _wide(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
    return parser


def cli_rst() -> list[str]:
    from aliascheck.cli import build_parser
    from aliascheck.errors import ExitCode

    parser = build_parser()
    lines = ["Exit status of every subcommand (``aliascheck.errors.ExitCode``):", ""]
    lines += _table(("status", "name"), [(str(int(code)), f"``{code.name}``") for code in ExitCode])
    for name, sub in [("aliascheck", parser), *_subparsers(parser, "aliascheck")]:
        heading = f"``{name}``"
        lines += [heading, "^" * len(heading), "", "::", ""]
        lines += ["   " + line if line else "" for line in _wide(sub).format_help().splitlines()]
        lines.append("")
    return lines


def cli_options() -> dict[str, list[str]]:
    """Each command's option strings (the test checks the reference shows every one)."""
    from aliascheck.cli import build_parser

    parser = build_parser()
    return {name: [s for a in sub._actions for s in a.option_strings]
            for name, sub in [("aliascheck", parser), *_subparsers(parser, "aliascheck")]}


# -- the corpus ---------------------------------------------------------------------------------
def corpus_rst() -> list[str]:
    from aliascheck.corpus import discover

    lines = []
    for entry in discover(ROOT / "corpus"):
        heading = entry.title
        links = "".join(f", `also <{url}>`__" for url in entry.also)
        lines += [f".. _corpus-{entry.id}:", "", heading, "-" * len(heading), "",
                  f"``{entry.id}`` (family ``{entry.family}``): `the report <{entry.source}>`__{links}", "",
                  f"*Affected:* {_text(entry.affected)}", "", _text(entry.summary), ""]
        for variant in entry.variants.values():
            expect = variant.expect
            said = expect.verdict + (f" ``{expect.kind}``" if expect.kind else "")
            said += f" on ``{expect.owner} {expect.path}``".rstrip() if expect.owner or expect.path else ""
            name = variant.shown.relative_to(entry.dir).as_posix() if variant.project else variant.file.name
            lines += [f"- ``{name}``: {said}" + (f". {_text(expect.note)}" if expect.note else "")
                      + (f" Known gap: {_text(expect.gap)}" if expect.gap else "")]
        lines.append("")
        shown = entry.variants["buggy"].shown.relative_to(entry.dir).as_posix()
        buggy, fixed = (_from_docs(entry.variants[name].shown) for name in ("buggy", "fixed"))
        lines += [f".. literalinclude:: {buggy}", "   :language: python", f"   :caption: corpus/{entry.id}/{shown}",
                  "", f"The correct code, as a diff from ``{shown}``:", "",
                  f".. literalinclude:: {fixed}", f"   :diff: {buggy}", ""]
    return lines


def _from_docs(path: Path) -> str:
    """A file as Sphinx's include directives take it: "/" is the docs directory."""
    return "/" + Path(os.path.relpath(path.resolve(), ROOT / "docs")).as_posix()


SECTIONS: dict[str, Callable[[], list[str]]] = {
    "options": options_rst,
    "ini": ini_rst,
    "markers": markers_rst,
    "fixture": fixture_rst,
    "kinds": kinds_rst,
    "checks": checks_rst,
    "channels": channels_rst,
    "finding-fields": finding_fields_rst,
    "adapters": adapters_rst,
    "hooks": hooks_rst,
    "cli": cli_rst,
    "corpus": corpus_rst,
}


def render(name: str) -> str:
    return "\n".join(SECTIONS[name]())


if __name__ == "__main__":  # python docs/_ext/refgen.py NAME: see what a section makes
    import sys

    print(textwrap.dedent(render(sys.argv[1])))
