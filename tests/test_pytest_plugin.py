"""The pytest plugin's own start-up: what ``--aliascheck`` adds before the first test runs."""

from __future__ import annotations

import sys

import pytest

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


def test_a_module_whose_marking_fails_runs_as_written_and_the_summary_says_so(pytester: pytest.Pytester) -> None:
    """A failure of the marking (an aliascheck bug) never breaks the user's module: it runs as
    written, and the run's summary names it, with the reason, every run (it is not cached)."""
    pytester.makefile(".toml", pyproject='[project]\nname = "unmarkable"\n')
    pytester.makeconftest("""
        import aliascheck.boundary.rewrite as rewrite

        original = rewrite.mark

        def mark(tree, base=None):
            if "UNMARKABLE" in rewrite.ast.unparse(tree):
                raise RecursionError("the marker's own bug")
            return original(tree, base)

        rewrite.mark = mark
    """)
    pytester.makepyfile(odd="UNMARKABLE = True\n\ndef keep(out, x):\n    out.append(x)\n    return out\n",
                        test_odd="from odd import keep\n\ndef test_keep():\n    assert keep([], 1) == [1]\n")
    for _ in range(2):
        result = pytester.runpytest_subprocess("--aliascheck", "-p", "no:cacheprovider")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["aliascheck: *odd.py ran unmarked, its keeps not looked at (the marking "
                                     "failed: RecursionError: the marker's own bug); please report it"])
        assert "test_odd.py ran unmarked" not in result.stdout.str()
