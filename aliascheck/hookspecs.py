"""The adapter contract. An adapter is a module (or object) implementing these hooks.

Bundled adapters live in ``aliascheck.plugins``; third-party ones are found
through the ``aliascheck.plugins`` entry-point group. See docs/adapters.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("aliascheck")
hookimpl = pluggy.HookimplMarker("aliascheck")


@hookspec
def aliascheck_install(options: Any) -> Callable[[], None] | None:
    """Install handover and check points (see ``aliascheck.instrument``); return the undo.

    Called once per session, after the adapter's framework has been imported.
    *options* is the session's :class:`aliascheck.config.Options`.
    """


@hookspec(firstresult=True)
def aliascheck_step_iterator(root: Any) -> Any:
    """What the harness should call ``next()`` on to step *root*, or None if unknown."""


@hookspec
def aliascheck_teardown(ledger: Any) -> None:
    """Verify what the adapter recorded itself (messages not yet received, cached values), then drop it.

    Called at the end of every checked test, before the ledger's own teardown check,
    in the test's thread. Report through ``ledger.report(...)``; never raise.
    """
