"""pytest entry point (placeholder until the detector lands)."""

from __future__ import annotations


def pytest_addoption(parser):  # pragma: no cover - replaced by the detector
    group = parser.getgroup("aliascheck")
    group.addoption("--aliascheck", action="store_true", default=False, help="enable aliascheck")
