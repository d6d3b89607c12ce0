"""The generated reference (docs/_ext/refgen.py) covers what the code registers, checked without Sphinx.

What pytest itself lists (``pytest --help``, ``pytest --markers``) and the tables in
the code (kinds, checks, adapters, hook specs, the command line) are the truth; every
entry must be in the text the docs build renders.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from aliascheck.adapters import BUNDLED
from aliascheck.findings import Finding
from aliascheck.kinds import CHANNELS, CHECKS, KINDS

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _load_refgen():
    spec = importlib.util.spec_from_file_location("aliascheck_docs_refgen", DOCS / "_ext" / "refgen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


refgen = _load_refgen()


def test_every_pytest_option_and_ini_key_pytest_lists_is_in_the_reference(pytester):
    out = pytester.runpytest("--help").stdout.str()
    flags = set(re.findall(r"^\s+(--aliascheck[\w-]*)", out, re.MULTILINE))
    inis = set(re.findall(r"^\s+(aliascheck\w*) \(", out, re.MULTILINE))
    assert "--aliascheck-steps" in flags and "aliascheck_stateful" in inis  # the parsing found them
    recorded_flags, recorded_inis = refgen.pytest_options()
    assert {f.names[0] for f in recorded_flags} == flags
    assert {i.name for i in recorded_inis} == inis
    options, ini = refgen.render("options"), refgen.render("ini")
    for flag in flags:
        assert re.search(rf"^\.\. option:: {re.escape(flag)}( |$)", options, re.MULTILINE), flag
    for name in inis:
        assert f".. confval:: {name}\n" in ini, name


def test_every_marker_pytest_lists_is_in_the_reference(pytester):
    out = pytester.runpytest("--markers").stdout.str()
    listed = set(re.findall(r"^@pytest\.mark\.(\w*aliascheck\w*)", out, re.MULTILINE))
    assert {"aliascheck", "no_aliascheck"} <= listed  # the parsing found them
    assert {signature.partition("(")[0] for signature, _ in refgen.markers()} == listed
    text = refgen.render("markers")
    for name in listed:
        assert re.search(rf"``@pytest\.mark\.{name}[(`]", text), name


def test_every_finding_kind_has_an_entry_and_a_label_to_link_to():
    text = refgen.render("kinds")
    for slug, kind in KINDS.items():
        assert f".. _kind-{slug}:\n" in text
        assert f"default severity: {kind.severity}" in text


def test_every_check_channel_adapter_hook_and_finding_field_is_in_the_reference():
    checks, channels, adapters = refgen.render("checks"), refgen.render("channels"), refgen.render("adapters")
    assert all(f"``{name}``" in checks for name in CHECKS)
    assert all(f"``{name}``" in channels for name in CHANNELS)
    assert all(f"``{name}``" in adapters for name in BUNDLED)
    fields = refgen.render("finding-fields")
    assert all(f"``{field.name}``" in fields for field in dataclasses.fields(Finding))
    hooks = refgen.render("hooks")
    import aliascheck.hookspecs as hookspecs

    specs = [name for name, fn in vars(hookspecs).items() if hasattr(fn, "aliascheck_spec")]
    assert "aliascheck_install" in specs and all(f"``{name}(" in hooks for name in specs)


def test_every_command_and_option_of_the_command_line_is_in_the_reference():
    text = refgen.render("cli")
    commands = refgen.cli_options()
    assert {"aliascheck", "aliascheck check", "aliascheck corpus"} <= set(commands)
    for command, options in commands.items():
        assert f"``{command}``\n" in text
        for option in options:
            assert option in text, (command, option)


def test_every_corpus_entry_has_a_label_and_its_code():
    text = refgen.render("corpus")
    entries = sorted(p.parent.name for p in (DOCS.parent / "corpus").glob("*/entry.toml"))
    assert entries
    for entry in entries:
        assert f".. _corpus-{entry}:\n" in text
        if (DOCS.parent / "corpus" / entry / "buggy" / "pyproject.toml").is_file():  # a project: its src module
            assert f"corpus/{entry}/buggy/src/" in text and f"/corpus/{entry}/fixed/src/" in text
        else:
            assert f"corpus/{entry}/buggy.py" in text and f"/corpus/{entry}/fixed.py" in text


def test_every_generated_section_is_on_a_page():
    pages = "\n".join(p.read_text() for p in DOCS.rglob("*") if p.suffix in (".md", ".rst") and "_build" not in p.parts)
    used = set(re.findall(r"\.\. aliascheck-reference:: ([\w-]+)", pages))
    assert used == set(refgen.SECTIONS)


def test_plain_text_is_escaped_and_flags_become_literals():
    assert refgen._text("keep *best* and\n state_dict_ with --aliascheck-strict") == (
        r"keep \*best\* and state\_dict\_ with ``--aliascheck-strict``")


def test_a_parser_call_the_generator_does_not_record_stops_the_docs_build():
    with pytest.raises(TypeError, match="teach Recorder"):
        refgen.Recorder().getgroup("aliascheck").addoption("--aliascheck-x", nargs=2)
    with pytest.raises(AttributeError, match="teach Recorder"):
        refgen.Recorder().addini_group  # noqa: B018 - the attribute access is what raises
