"""What a fixture's teardown sees: the test's objects are let go when its call phase ends, as plain
pytest lets them go (a leak check in an autouse fixture, after the test function returned)."""

from __future__ import annotations

import probelib as p
import pytest


@pytest.fixture(autouse=True)
def no_leaked_connections():
    yield
    assert len(p.LIVE_CONNS) == 0, "a Conn outlived its test"


def test_a_handover_in_the_test_body() -> None:
    c = p.Conn()
    sd = c.state_dict()
    assert sd["stats"]["n"] == 0


def test_a_view_kept_in_the_test_body() -> None:
    c = p.Conn()
    frames = []
    frames.append(c.buf[:2])
    assert len(frames) == 1


def test_a_load_in_the_test_body() -> None:
    c = p.Conn()
    c.load_state_dict(c.state_dict())
    assert c.stats == {"n": 0}
