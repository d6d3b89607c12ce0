"""A module-, class- or session-scoped fixture's value, edited in place by one test, is what every later
test that asks for it receives (aliascheck.shared_fixtures)."""

from __future__ import annotations

import pytest

RUN = ("--aliascheck", "-p", "no:cacheprovider", "-p", "no:randomly", "-rA")


def test_a_fixtures_teardown_forgets_what_was_seen_of_its_value() -> None:
    """A module-scoped fixture is made anew for each module: once its value is torn down, a new value at
    a reused address is looked at afresh, never compared with the last module's."""
    from aliascheck.shared_fixtures import SharedFixtures

    class Ledger:
        recording = True

        def report(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("nothing to report")

    class Def:
        scope = "module"

    shared, led, fixture, other = SharedFixtures(), Ledger(), Def(), Def()
    shared._compare(led, "test_a.py::t", "conf", fixture, {"module": "test_a"})
    shared._compare(led, "test_b.py::t", "conf", other, {"module": "test_b"})
    shared.finished(fixture)
    assert [key[0] for key in shared.seen] == [id(other)]


def test_a_shared_fixture_value_edited_by_one_test_is_judged_where_the_next_receives_it(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import pytest

        class Client:
            def __init__(self):
                self.calls = 0

        @pytest.fixture(scope="session")
        def base_cfg():
            return {"debug": False, "workers": 4}

        @pytest.fixture(scope="module")
        def limits():
            return {"rate": 10}

        @pytest.fixture(scope="session")
        def collected():
            return []

        @pytest.fixture(scope="session")
        def client():
            return Client()

        @pytest.fixture
        def per_test():
            return {"n": 0}
    """)
    pytester.makepyfile(test_a="""
        def apply_overrides(cfg, **kw):
            cfg.update(kw)
            return cfg

        def test_debug_mode(base_cfg):
            assert apply_overrides(base_cfg, debug=True)["debug"] is True

        def test_default_workers(base_cfg):
            assert base_cfg["workers"] == 4

        def test_rate_overridden_for_one_test(limits, monkeypatch):
            monkeypatch.setitem(limits, "rate", 1)

        def test_rate_read(limits):
            assert limits["rate"] == 10

        def test_collect_one(collected):
            collected.append(1)

        def test_collect_two(collected):
            collected.append(2)

        def test_client_used(client):
            client.calls += 1

        def test_client_used_again(client):
            client.calls += 1

        def test_per_test_edited(per_test):
            per_test["n"] += 1

        def test_per_test_again(per_test):
            per_test["n"] += 1

        def test_a_directory_of_its_own(tmp_path_factory):
            assert tmp_path_factory.mktemp("data").is_dir()  # pytest's own fixture keeps its own counters

        def test_another_directory(tmp_path_factory):
            assert tmp_path_factory.mktemp("data").is_dir()
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=11, failed=1)
    result.stdout.fnmatch_lines([
        "*base_cfg (session-scoped fixture) hands every test that asks one object; it was edited by an earlier "
        "test: [[]'debug'[]]: False -> True",
        "*fix: copy the fixture's value in the test that changes it (test_a.py::test_debug_mode), or make "
        "base_cfg function-scoped",
        "FAILED test_a.py::test_default_workers*"])
