"""The dill adapter end to end: a marked project function copied or pickled by dill, recurse on."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("dill", reason="needs dill (the dev extra)")

RUN = ("--aliascheck", "-W", "error", "-p", "no:cacheprovider")


def test_a_marked_closure_pickles_with_recurse_as_written(pytester: pytest.Pytester) -> None:
    """dill's recurse=True pickles the globals a function's code names: marked code names aliascheck's
    runtime, which dill would pickle by value and could not (dill's own suite failed 3 tests). The
    runtime's name is left out of globalvars, and the code saved is the unmarked twin, so another
    interpreter without aliascheck runs it too."""
    pytester.makepyfile(work=textwrap.dedent('''
        def make():
            def func(x):
                y = abs(x)  # a call's result bound: marked
                rows = []
                rows.append({"y": y})
                return rows
            return func
    '''), test_dill=textwrap.dedent('''
        import os
        import subprocess
        import sys

        import dill
        import dill.detect
        import work

        def test_copy_with_recurse():
            f = work.make()
            assert "@aliascheck" not in dill.detect.globalvars(f, recurse=True, builtin=True)
            assert dill.copy(f, recurse=True)(-2) == [{"y": 2}]

        def test_loaded_where_aliascheck_is_not():
            blob = dill.dumps(work.make(), recurse=True)
            code = "import sys, dill; f = dill.loads(sys.stdin.buffer.read()); print(f(-3))"
            run = subprocess.run([sys.executable, "-I", "-c", code], input=blob, capture_output=True, timeout=120)
            assert run.returncode == 0, run.stderr.decode()[-800:]
            assert run.stdout.strip() == b"[{'y': 3}]"
    '''))
    pytester.makeconftest("import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n")
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=2)
    plain = pytester.runpytest_subprocess("-p", "no:aliascheck", "-p", "no:cacheprovider")
    plain.assert_outcomes(passed=2)


def test_a_walk_through_builtins_meets_nothing_that_marked_code_changes(pytester: pytest.Pytester) -> None:
    """dill's ``__diff`` memorises every module's attributes, builtins' among them (through a module's
    ``__builtins__``), and later tells whether any changed. The builtins name marked code reads led to
    the runtime module, whose tables change at every marked statement: dill's own ``test_diff`` found
    ``abc`` changed, only under --aliascheck. It leads to a portal of fixed slots with no ``__dict__``."""
    pytester.makepyfile(work=textwrap.dedent('''
        def run():
            rows = []
            for n in range(3):
                row = {"n": abs(n)}  # a call's result bound and kept: marked
                rows.append(row)
            return rows
    '''), test_diff=textwrap.dedent('''
        import abc

        from dill import __diff as diff

        import work

        def test_nothing_changed():
            diff.memorise(abc.ABCMeta, force=True)
            assert not diff.has_changed(abc)
            assert work.run() == [{"n": 0}, {"n": 1}, {"n": 2}]
            assert not diff.has_changed(abc)
            abc.ABCMeta.zzz = 1
            try:
                assert diff.has_changed(abc)
            finally:
                del abc.ABCMeta.zzz
    '''))
    pytester.makeconftest("import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n")
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=1)
    plain = pytester.runpytest_subprocess("-p", "no:aliascheck", "-p", "no:cacheprovider")
    plain.assert_outcomes(passed=1)
