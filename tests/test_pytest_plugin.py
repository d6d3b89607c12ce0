"""The pytest plugin's own start-up: what ``--aliascheck`` adds before the first test runs."""

from __future__ import annotations

import sys

PROBE = """
import sys

import aliascheck.ledger
import aliascheck.session


def test_aliaschecks_core_imports_as_installed():
    for module in (aliascheck.ledger, aliascheck.session):
        assert type(module.__loader__).__name__ == "SourceFileLoader", module.__loader__
        assert "@py_builtins" not in vars(module)


def test_the_users_asserts_are_still_rewritten():
    assert [1, 2] == [1, 3]
"""


def test_aliascheck_skips_pytests_rewriting_of_its_own_modules_but_not_the_users(pytester):
    # pytest rewrites every module of a pytest11 package: aliascheck's whole core, parsed and
    # rewritten at each run. Its own modules import plainly; the user's asserts still explain.
    pytester.makepyfile(test_probe=PROBE)
    result = pytester.runpytest_subprocess("--aliascheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*At index 1 diff: 2 != 3*"])


def test_the_finder_is_gone_after_the_session(pytester):
    before = list(sys.meta_path)
    pytester.makepyfile(test_empty="def test_empty():\n    pass\n")
    pytester.runpytest("--aliascheck", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert [type(f).__name__ for f in sys.meta_path] == [type(f).__name__ for f in before]
