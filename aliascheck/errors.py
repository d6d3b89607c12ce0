"""The one error tree. A finding is an AssertionError, so pytest shows a failed test."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .findings import Finding


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


class AliascheckWarning(pytest.PytestWarning):
    """A finding in ``--aliascheck-mode=warn``, or a risk that stepping did not turn into a change."""
