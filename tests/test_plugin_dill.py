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
