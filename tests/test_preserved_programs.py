"""Programs from real suites' own tests that behaved differently under ``--aliascheck`` (pure-eval,
typeguard, omegaconf: ``peers/differential.py``), each cut down to what differed. Each project runs
plain and under ``--aliascheck``, and must pass both ways."""

from __future__ import annotations

import textwrap

import pytest

METACLASS_DICT_PROPERTY = {
    "tests/test_x.py": """
        reads = []

        class MetaMeta(type):
            @property
            def __dict__(self):  # pure-eval's getattr_static tests count such reads
                reads.append(self)
                return {}

        class Meta(type, metaclass=MetaMeta):
            pass

        def test_x():
            assert reads == []
    """,
}

METACLASS_GETATTR = {
    "tests/test_x.py": """
        class Meta(type):
            asked = []

            def __getattr__(cls, name):
                Meta.asked.append(name)
                raise AttributeError(name)

        def test_x():
            class Thing(metaclass=Meta):
                pass
            assert Meta.asked == []
    """,
}

OPTIMIZED_CHILD = {  # typeguard's test_typechecked_disabled_in_optimized_mode
    "mod.py": """
        DEBUG = __debug__
    """,
    "tests/test_x.py": """
        import subprocess
        import sys

        import mod

        def test_x():
            out = subprocess.run([sys.executable, "-O", "-c", "import mod; print(mod.DEBUG)"],
                                 capture_output=True, text=True, check=True)
            assert out.stdout.strip() == "False"
    """,
}

SETSTATE_WRITES_ITS_FRESH_STATE = {  # omegaconf's BaseContainer.__setstate__, imported by a conftest
    "mod.py": """
        class C:
            def __getstate__(self):
                return dict(self.__dict__)

            def __setstate__(self, state):
                state["cache"] = None
                self.__dict__.update(state)
    """,
    "tests/conftest.py": """
        import mod
    """,
    "tests/test_x.py": """
        import pickle

        from mod import C

        def test_x():
            assert vars(pickle.loads(pickle.dumps(C()))) == {"cache": None}
    """,
}

WARNING_STACKLEVEL = {  # omegaconf's deprecation warnings, of a class a conftest imported
    "mod.py": """
        import warnings

        class C:
            def __getstate__(self):
                return self.__dict__

            def __setstate__(self, state):
                self.__dict__ = state

            def old(self):
                warnings.warn("old", DeprecationWarning, stacklevel=2)
    """,
    "tests/conftest.py": """
        import mod
    """,
    "tests/test_x.py": """
        import pytest

        from mod import C

        def test_x():
            with pytest.warns(DeprecationWarning) as record:
                C().old()
            assert record[0].filename == __file__
    """,
}

NO_CYCLE_THROUGH_ARGUMENTS = {  # omegaconf's test_omegaconf_error_paths_release_frame_locals
    "mod.py": """
        class C:
            def __getstate__(self):
                return self.__dict__

            def __setstate__(self, state):
                self.__dict__ = state

            def fail(self, cause):
                try:
                    raise cause
                finally:
                    del cause
    """,
    "tests/conftest.py": """
        import mod
    """,
    "tests/test_x.py": """
        import gc

        from mod import C

        freed = []

        class Local:
            def __del__(self):
                freed.append(True)

        def outer():
            local = Local()
            try:
                C().__setstate__({})
                C().fail(ValueError())
            except ValueError:
                pass

        def test_x():
            gc.disable()
            try:
                outer()
                assert freed
            finally:
                gc.enable()
    """,
}


@pytest.mark.parametrize("files", [METACLASS_DICT_PROPERTY, METACLASS_GETATTR, OPTIMIZED_CHILD,
                                   SETSTATE_WRITES_ITS_FRESH_STATE, WARNING_STACKLEVEL, NO_CYCLE_THROUGH_ARGUMENTS],
                         ids=["metaclass-dict-property", "metaclass-getattr", "optimized-child",
                              "setstate-writes-its-fresh-state", "warning-stacklevel", "no-cycle-through-arguments"])
def test_the_program_does_what_it_does_without_aliascheck(pytester: pytest.Pytester, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    pytester.makeini("[pytest]\npythonpath = .\n")
    env = {"ALIASCHECK_CACHE_DIR": str(pytester.path / "marked")}  # a cache of its own, shared by the two -O runs
    for name, value in env.items():
        pytester._monkeypatch.setenv(name, value)
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "tests")
    plain.assert_outcomes(passed=1)
    for _ in range(2):  # the second run reads what the first marked
        checked = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--aliascheck", "tests")
        checked.assert_outcomes(passed=1)
