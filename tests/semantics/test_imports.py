"""The program's import hook: a replaced ``builtins.__import__`` (dill's ``__diff`` installs one to
memorise every module) is called for the program's own imports only, never for an import statement
of aliascheck's, in a test's body or between clean tests. (A fingerprint that pickles a class or a
function by name still imports its module, as pickle does: not in this workload.)"""

from __future__ import annotations

import builtins

import probelib as p

CALLS: list[str] = []
_original = builtins.__import__


def _counting(name, globals=None, *args, **kwargs):  # type: ignore[no-untyped-def]  # noqa: A002
    importer = (globals or {}).get("__name__", "")
    if importer.startswith("aliascheck"):  # an import statement of aliascheck's own; others are the program's
        CALLS.append(f"{importer}: {name}")
    return _original(name, globals, *args, **kwargs)


def test_1_install_the_programs_hook() -> None:
    builtins.__import__ = _counting


def test_2_keeps_copies_and_calls_under_the_hook() -> None:
    for _ in range(3):
        assert p.churn() == 4
        p.local_weakref(None)
        p.copy_of(p.LoggingMap(a=[1]))
        p.build_ring(10)
    assert p.send_to_receivers([dict]) == [(dict, {})]


def test_3_nothing_but_the_program_imported() -> None:
    builtins.__import__ = _original
    assert CALLS == [], CALLS


def test_4_a_test_that_replaces_sys_modules_ends_as_written(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The call phase's end check runs before the test's monkeypatch is undone: it finds aliascheck's
    own modules without ``sys.modules``, which structlog's suite replaces with ``{}`` (it failed, and
    the failure's report then stopped the session, only under --aliascheck)."""
    import sys

    assert p.churn() == 4
    monkeypatch.setattr(sys, "modules", {})
    assert "probelib" not in sys.modules
