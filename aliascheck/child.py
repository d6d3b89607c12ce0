"""The startup hook's module: a ledger in a Python child that a checked test run started by exec.

``aliascheck-child.pth``, installed with the package, imports this module and calls
:func:`start` when :data:`aliascheck.spool.ENV` is set: in a child of ``spawn``,
``forkserver``'s server, ``subprocess`` running Python. Without the variable the hook
costs one dictionary lookup. :func:`start` builds the child's session from the
variable; the rest (its spool file, its teardown check when it exits, ledgers for its
own children) is :mod:`aliascheck.processes`'s, which a session uses in every process.
A forked child needs no hook: it swaps in a ledger of its own at fork.
"""
from __future__ import annotations

import atexit
import json
import os
import sys

from . import processes
from .session import Session
from .spool import ENV, TEST_ENV, options_from_json


def start() -> None:
    """The startup hook's entry: begin a child ledger if a checked session started this process."""
    raw = os.environ.get(ENV)
    if not raw or processes.current() is not None:
        return
    try:
        config = json.loads(raw)
        options = options_from_json(config["options"])
        directory = str(config["spool"])
        plugins = [tuple(p) for p in config.get("plugins", ())]
    except (ValueError, TypeError, KeyError) as exc:
        sys.stderr.write(f"aliascheck: this child runs unchecked: bad {ENV} ({exc})\n")
        return
    session = Session(options, plugins=plugins, child=True)
    session.start(children=False)
    if processes.begin(session, directory, os.environ.get(TEST_ENV) or None):
        session.adapters.refresh()  # what needs no framework (generic), and frameworks imported already
        session.adapters.watch_imports()
        atexit.register(processes.finish)
    else:
        session.stop()
