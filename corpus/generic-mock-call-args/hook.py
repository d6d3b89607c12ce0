"""Tell aliascheck to watch the arguments every mock records, as handed over at the call.

unittest.mock keeps references to call arguments by design (python/cpython#94348), so
aliascheck has no handover point in it; this hook adds one. In a test suite the same
is ``aliascheck.watch(mock.call_args.args, owner=...)`` with the aliascheck fixture.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from unittest import mock

from aliascheck.instrument import patch


def install(session: Any) -> Callable[[], None]:
    def wrap(original: Any) -> Any:
        @functools.wraps(original)
        def _increment_mock_call(self: Any, /, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            owner = f"unittest.mock.{type(self).__name__}({self._extract_mock_name()})"
            recorded_args, recorded_kwargs = self.call_args  # the objects call_args_list keeps
            session.ledger.watch(recorded_args, owner)
            if recorded_kwargs:
                session.ledger.watch(recorded_kwargs, owner)

        return _increment_mock_call

    return patch(mock.CallableMixin, "_increment_mock_call", wrap)
