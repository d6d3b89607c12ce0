"""The cloudpickle adapter end to end: ``pytest --aliascheck`` in a subprocess (class tracking is process-wide).

Dynamic classes come from a script run as ``__main__`` or from a module registered
with ``cloudpickle.register_pickle_by_value``; both take cloudpickle's by-value path.
"""

from __future__ import annotations

import json
import textwrap

import pytest

cloudpickle = pytest.importorskip("cloudpickle", reason="needs the extra: pip install 'aliascheck[cloudpickle]'")

from aliascheck import fresh  # noqa: E402
from aliascheck.errors import AliasFinding  # noqa: E402

RUN = ("--aliascheck", "-W", "error", "-p", "no:cacheprovider")

# The reproducer, verbatim; line 7 is the loads.
REPRO = """\
import cloudpickle
class Klass:
    classvar = None
saved = cloudpickle.dumps(Klass)
Klass.classvar = 100
klass_id = id(Klass)
cloudpickle.loads(saved)
"""

DYNMOD = """\
import abc
import enum


class Klass:
    classvar = None

    def method(self):
        return "original"


class Instance:
    classvar = None


class Global:
    classvar = None


def make():
    return Global()


class Closure:
    classvar = None


class Color(enum.Enum):
    RED = 1


Color.extra = None


class Base(abc.ABC):
    classvar = None


class Registered:
    pass


Base.register(Registered)


class Slotted:
    __slots__ = ("x",)
    classvar = None


class Methods:
    def method(self):
        return "original"
"""

HEADER = """\
import gc
import runpy
import threading
import weakref

import cloudpickle
import pytest

import dynmod
from aliascheck.fixes import cloudpickle as fix

cloudpickle.register_pickle_by_value(dynmod)
"""


def _project(pytester: pytest.Pytester, body: str, name: str = "test_case") -> None:
    pytester.makepyfile(dynmod=DYNMOD, repro=REPRO, **{name: HEADER + textwrap.dedent(body)})


def test_reproducer_is_flagged_in_100_of_100_runs_and_clean_with_the_fix(pytester: pytest.Pytester) -> None:
    _project(pytester, """
        @pytest.mark.parametrize("run", range(100))
        def test_reproducer(run):
            ns = runpy.run_path("repro.py", run_name="__main__")
            assert ns["Klass"].classvar is None and id(ns["Klass"]) == ns["klass_id"]  # the bug itself

        @pytest.mark.parametrize("run", range(100))
        def test_reproducer_with_the_fix(run):
            with fix.keep_existing_classes():
                ns = runpy.run_path("repro.py", run_name="__main__")
            assert ns["Klass"].classvar == 100
    """)
    result = pytester.runpytest_subprocess(*RUN, "--aliascheck-report=report.json")
    result.assert_outcomes(failed=100, passed=100)
    result.stdout.fnmatch_lines([
        "*AliasFinding: cloudpickle.loads (repro.py:7) reset __main__.Klass.classvar: 100 -> None",
        "*aliascheck [[]class-reset[]]: cloudpickle.loads (repro.py:7) reset __main__.Klass.classvar: 100 -> None",
        "*owner:    __main__.Klass (pickled at repro.py:4)",
        "*change:   classvar    100 -> None",
        "*seen by:  the live class before and after loads (1)",
        "*handover: repro.py:7",
        "*fix:      repro.py:7: load with aliascheck.fixes.cloudpickle.loads(data, existing_classes='keep')",
        # One bug in the terminal summary, with the tests that hit it.
        "*aliascheck: bugs*",
        "[[]class-reset] cloudpickle.loads (repro.py:7) reset __main__.Klass.classvar: 100 -> None",
        "    test_case.py::test_reproducer[[]0]",
        # The fix's layer sits above the detector and keeps the class: those loads have nothing to check.
        "aliascheck: 200 tests, 200 handovers recorded, 100 checked: 1 bug (100 occurrences in 100 tests), "
        "0 warnings, 0 unverifiable",
    ])
    report = json.loads((pytester.path / "report.json").read_text())
    found = {(f["kind"], f["owner"], f["path"], f["before"], f["after"], f["check"]) for f in report["findings"]}
    assert found == {("class-reset", "__main__.Klass", "classvar", "100", "None", "loads")}
    tests = {f["test"] for f in report["findings"]}
    assert tests == {f"test_case.py::test_reproducer[{i}]" for i in range(100)}


def test_a_reset_by_another_thread_is_flagged_in_100_of_100_runs(pytester: pytest.Pytester) -> None:
    _project(pytester, """
        def race(load):
            dynmod.Klass.classvar = None
            saved = cloudpickle.dumps(dynmod.Klass)
            ready, loaded, seen = threading.Barrier(2), threading.Event(), []

            def user():
                dynmod.Klass.classvar = 100
                ready.wait()
                assert loaded.wait(60)
                seen.append(dynmod.Klass.classvar)

            def loader():
                ready.wait()  # the user thread has set 100 before this loads
                load(saved)
                loaded.set()

            threads = [threading.Thread(target=user, name="user"), threading.Thread(target=loader, name="loader")]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return seen

        @pytest.mark.parametrize("run", range(100))
        def test_threaded(run):
            assert race(cloudpickle.loads) == [None]

        @pytest.mark.parametrize("run", range(100))
        def test_threaded_with_the_fix(run):
            assert race(fix.loads) == [100]
    """)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(failed=100, passed=100)
    result.stdout.fnmatch_lines([
        "*owner:    dynmod.Klass (pickled at test_case.py:*)",
        "*change:   classvar    100 -> None",
        "*handover: test_case.py:* (thread loader)",
        "*: 1 bug (100 occurrences in 100 tests), 0 warnings*",
    ])


def test_classes_nested_in_instances_globals_closures_enums_abcs_and_slots_are_checked(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, """
        def reset(cls, obj, attr="classvar"):
            saved = cloudpickle.dumps(obj)
            setattr(cls, attr, 100)
            cloudpickle.loads(saved)

        def test_instance():
            reset(dynmod.Instance, dynmod.Instance())

        def test_function_global():
            reset(dynmod.Global, dynmod.make)

        def test_closure():
            cls = dynmod.Closure
            reset(cls, lambda: cls)

        def test_enum():
            reset(dynmod.Color, dynmod.Color.RED, "extra")
            assert cloudpickle.loads(cloudpickle.dumps(dynmod.Color.RED)) is dynmod.Color.RED

        def test_abc():
            reset(dynmod.Base, dynmod.Base)
            assert issubclass(dynmod.Registered, dynmod.Base)

        def test_slots():
            reset(dynmod.Slotted, dynmod.Slotted)

        def test_monkeypatched_method():
            saved = cloudpickle.dumps(dynmod.Methods)
            dynmod.Methods.method = lambda self: "patched"
            cloudpickle.loads(saved)
            assert dynmod.Methods().method() == "original"
    """)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(failed=7)
    for owner, path in [("Instance", "classvar"), ("Global", "classvar"), ("Closure", "classvar"),
                        ("Color", "extra"), ("Base", "classvar"), ("Slotted", "classvar")]:
        result.stdout.fnmatch_lines([f"*owner:    dynmod.{owner} (pickled at *", f"*change:   {path}    100 -> None"])
    result.stdout.fnmatch_lines([
        "*owner:    dynmod.Methods*",
        "*change:   method    '<function <lambda> ????????>' -> '<function method ????????>'",
    ])
    assert "_abc_impl" not in result.stdout.str()


def test_loads_that_change_nothing_fresh_classes_and_allowed_classes_are_not_findings(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\naliascheck_allow_class_update = dynmod.Inst*\n")
    _project(pytester, """
        def test_unchanged_state_and_rebuilt_methods():
            saved = cloudpickle.dumps(dynmod.Klass)
            assert cloudpickle.loads(saved) is dynmod.Klass

        def test_concurrent_increments_by_design():
            dynmod.Global.classvar = 0
            cloudpickle.dumps(dynmod.Global)
            start = threading.Barrier(2)

            def bump():
                start.wait()
                for _ in range(1000):
                    with lock:
                        dynmod.Global.classvar += 1

            lock = threading.Lock()
            threads = [threading.Thread(target=bump) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert dynmod.Global.classvar == 2000

        def test_a_fresh_class_populated_by_loads():
            def pickled():
                class Local:
                    classvar = 100
                return cloudpickle.dumps(Local), weakref.ref(Local)

            saved, gone = pickled()
            gc.collect()
            assert gone() is None
            assert cloudpickle.loads(saved).classvar == 100

        def test_allowed_by_ini():
            saved = cloudpickle.dumps(dynmod.Instance)
            dynmod.Instance.classvar = 100
            cloudpickle.loads(saved)

        @pytest.mark.aliascheck(ignore=["dynmod.Closure:classvar"])
        def test_allowed_by_marker():
            saved = cloudpickle.dumps(dynmod.Closure)
            dynmod.Closure.classvar = 100
            cloudpickle.loads(saved)

        @pytest.mark.no_aliascheck
        def test_not_checked():
            saved = cloudpickle.dumps(dynmod.Slotted)
            dynmod.Slotted.classvar = 100
            cloudpickle.loads(saved)
    """)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=6)
    # no_aliascheck is not a checked test; the allowed class is not even compared; the fresh one has nothing to.
    result.stdout.fnmatch_lines(["aliascheck: 5 tests, 5 handovers recorded, 2 checked: no bugs, 0 warnings, *"])


# -- the fresh-process check (aliascheck.fresh), in this process ---------------------


def test_fresh_process_sees_the_class_as_pickled_not_as_it_is_here() -> None:
    class Klass:
        classvar = None

        def method(self) -> str:
            return "original"

    saved = cloudpickle.dumps(Klass)
    assert fresh.compare(saved) == []
    Klass.classvar = 100  # type: ignore[assignment]
    Klass.added = 1  # type: ignore[attr-defined]
    assert cloudpickle.loads(cloudpickle.dumps(Klass)) is Klass  # an in-process round trip hides it
    found = {(f.kind, f.owner.rpartition(".")[2], f.path, f.before, f.after) for f in fresh.compare(saved)}
    assert found == {("fresh-class", "Klass", "classvar", "100", "None"),
                     ("fresh-class", "Klass", "added", "1", "<missing>")}
    with pytest.raises(AliasFinding, match=r"change:   classvar    100 -> None"):
        fresh.assert_same(saved)


def test_fresh_process_that_cannot_load_the_pickle_says_why() -> None:
    class Unreachable:
        pass

    saved = cloudpickle.dumps(Unreachable).replace(b"cloudpickle.cloudpickle", b"cloudpickle.nosuchmodul")
    (finding,) = fresh.compare(saved)
    assert (finding.owner, finding.path) == ("<pickle>", "<loads>")
    assert finding.after.startswith("ModuleNotFoundError")


def test_a_function_pickled_by_value_runs_where_aliascheck_does_not(pytester: pytest.Pytester) -> None:
    """A project function registered for pickling by value carries its code as written, not as
    marked: a worker without aliascheck (a clean environment, a remote scheduler) runs it."""
    pytester.makepyfile(work=textwrap.dedent('''
        def collect(n):
            out = []
            for i in range(n):
                row = {"i": i, "v": [i]}
                out.append(row)
            return out
    '''), test_by_value=textwrap.dedent('''
        import os
        import subprocess
        import sys

        import cloudpickle
        import work

        def test_worker_runs_it():
            cloudpickle.register_pickle_by_value(work)
            try:
                blob = cloudpickle.dumps(work.collect)
            finally:
                cloudpickle.unregister_pickle_by_value(work)
            code = "import sys, pickle; f = pickle.loads(sys.stdin.buffer.read()); print(len(f(3)))"
            run = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True,
                                 env={"PATH": os.environ.get("PATH", "")}, timeout=120)
            assert run.returncode == 0, run.stderr.decode()[-800:]
            assert run.stdout.strip() == b"3"
    '''))
    pytester.makeconftest("import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n")
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=1)


def test_marked_classes_sent_again_and_introspected_are_as_without_aliascheck(pytester: pytest.Pytester) -> None:
    """What cloudpickle's own suite does with classes the marking touched (differential run,
    cloudpickle 3.1.2): a local class whose method is marked, round-tripped in one process, is
    not reset (its method is compared as compiled without marks); an attribute the live class
    lacked is added, not reset (copyreg's ``__slotnames__`` cache, a method the sender added);
    and ``_extract_code_globals`` of marked code names only the program's globals."""
    pytester.makepyfile(test_cp=textwrap.dedent('''
        import multiprocessing
        import pickle
        from concurrent.futures import ProcessPoolExecutor

        import cloudpickle
        from cloudpickle.cloudpickle import _extract_code_globals

        GLOBAL = {}
        _kept = []

        def writer():
            GLOBAL["k"] = 1

        def load_and_keep(data):
            obj = pickle.loads(data)
            _kept.append(obj)
            return obj.__name__ if isinstance(obj, type) else type(obj).__name__

        def test_local_class_with_a_marked_method_round_tripped():
            class SomeClass:
                def __init__(self, x):
                    self.x = x
                    self.seen = []
                    self.seen.append(x)

            assert pickle.loads(cloudpickle.dumps(SomeClass(1))).x == 1

        def test_class_sent_again_with_what_was_added_to_it():
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as ex:
                ex.submit(len, "").result()

                class A:
                    pass

                assert ex.submit(load_and_keep, cloudpickle.dumps(A)).result() == "A"
                assert ex.submit(load_and_keep, cloudpickle.dumps(A())).result() == "A"  # A.__slotnames__
                A.echo = lambda self, x: x
                assert ex.submit(load_and_keep, cloudpickle.dumps(A)).result() == "A"

        def test_code_globals_of_marked_code():
            assert set(_extract_code_globals(writer.__code__)) == {"GLOBAL"}
    '''))
    result = pytester.runpytest_subprocess(*RUN, "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("*class-reset*")
