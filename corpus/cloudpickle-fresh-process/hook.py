"""Check every cloudpickle payload the variant made in a fresh process, when the variant has finished.

``aliascheck.fresh.compare(payload)`` loads a pickle in a new interpreter and reports
each attribute of a dynamic class whose value there differs from the live class here
(to the running session, which applies its ignore patterns).
In a test suite one calls ``aliascheck.fresh.assert_same(payload)``; the corpus runner
calls this hook around the variant instead, so that the variant stays plain Python.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import cloudpickle

from aliascheck import fresh
from aliascheck.instrument import patch


def install(session: Any) -> Callable[[], None]:
    made: list[bytes] = []

    def wrap(original: Any) -> Any:
        @functools.wraps(original)
        def dumps(obj: Any, *args: Any, **kwargs: Any) -> bytes:
            data = original(obj, *args, **kwargs)
            made.append(data)
            return data

        return dumps

    unpatch = patch(cloudpickle, "dumps", wrap)

    def undo() -> None:
        unpatch()
        for data in made:
            fresh.compare(data)  # reports to the running session's ledger

    return undo
