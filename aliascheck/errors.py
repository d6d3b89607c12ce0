"""The one error tree. A finding is an AssertionError, so pytest shows a failed test."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .findings import Finding


class ExitCode(IntEnum):
    """Every ``aliascheck`` subcommand's exit status (pytest's ``ExitCode`` is the model)."""

    OK = 0
    FINDINGS = 1  # findings, a corpus verdict that differs, or the code under check raised
    USAGE_ERROR = 2
    INTERNAL_ERROR = 3


class AliascheckError(Exception):
    """Base of every error aliascheck raises about itself or its input."""


class UsageError(AliascheckError):
    """The user asked for something that cannot be done (bad target, bad option)."""


class HarnessError(AliascheckError):
    """The harness could not drive a node (it hung, or stepping raised)."""


class AliasFinding(AssertionError):
    """Handed-over state changed (or is at risk): the test fails with the rendered findings."""

    def __init__(self, findings: Sequence[Finding], text: str) -> None:
        super().__init__(text)
        self.findings = list(findings)


def __getattr__(name: str) -> Any:
    # Built on first use: a PytestWarning subclass needs pytest, which the command
    # line (aliascheck corpus/check) should not import just to build its parser.
    if name == "AliascheckWarning":
        import pytest

        class AliascheckWarning(pytest.PytestWarning):
            """A finding in ``--aliascheck-mode=warn``, or a risk that stepping did not turn into a change."""

        AliascheckWarning.__module__, AliascheckWarning.__qualname__ = __name__, name
        globals()[name] = AliascheckWarning
        return AliascheckWarning
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
