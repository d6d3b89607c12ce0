import contextlib

import pytest

pytest_plugins = "pytester"

# Loaded once, before any in-process pytester run: a run that imports them first unloads them after,
# and torch's dynamo (which the torch adapter's compile polyfills import) registers an operator
# library that cannot be registered twice, nor numpy loaded twice: a later run's import would fail,
# depending on which tests a worker happened to run first.
with contextlib.suppress(ImportError):
    import numpy  # noqa: F401
with contextlib.suppress(ImportError):
    import torch._dynamo  # noqa: F401

# Fixture packages (tests/data/sweep_pkg holds a test module the sweep must skip) are data, not tests.
collect_ignore = ["data"]


@pytest.fixture(autouse=True)
def _pytester_runs_without_hypothesis(request: pytest.FixtureRequest) -> None:
    """A pytester run does not load hypothesis's pytest plugin: no test file it runs uses hypothesis,
    and importing it took ~1 s of each subprocess run's ~1.5 s start-up (the suite: 290 s -> 247 s at -n 2).
    pytester discards the outer PYTEST_ADDOPTS, so this is set after it is made."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
        request.getfixturevalue("monkeypatch").setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
