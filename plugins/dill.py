"""dill adapter: a function dill pickles by value carries its code as compiled without marking.

dill saves a function's code object itself, and with ``recurse=True`` (``dill.settings
['recurse']``, ``dill.copy(f, recurse=True)``) the globals its code names, found by
``dill.detect.globalvars``. Marked code names aliascheck's runtime (``@aliascheck``, reached
through builtins), so the runtime module would be pickled into the function's globals by value,
and an interpreter without aliascheck could not run the code at all (dill's own suite:
``test_circular_reference``, ``test_mixins``, ``test_decorated``).

Two wrappers, both undone when the session ends:

- the Pickler's saver of code objects gets the plain twin
  (:func:`aliascheck.boundary.rewrite.plain_code`), as cloudpickle's reducer does;
- ``globalvars`` leaves the runtime's name out of what a function's code refers to.

A function copied by dill in the test's process therefore runs unmarked, as it would have been
compiled without ``--aliascheck``.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import dill._dill as _dill
import dill.detect as _detect

from aliascheck.boundary.rewrite import RUNTIME, plain_code
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import patch, patch_entry, undo_all

REQUIRES = "dill"


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    dispatch: dict[Any, Any] = getattr(_dill.Pickler, "dispatch", {})
    return undo_all([patch_entry(dispatch, types.CodeType, _plain_code_saved),
                     patch(_detect, "globalvars", _without_runtime)])


def _plain_code_saved(original: Any) -> Any:
    """Code objects saved as compiled without marking."""

    @functools.wraps(original)
    def save_code(pickler: Any, obj: Any) -> Any:
        return original(pickler, plain_code(obj))

    return save_code


def _without_runtime(original: Any) -> Any:
    @functools.wraps(original)
    def globalvars(func: Any, recurse: bool = True, builtin: bool = False) -> Any:
        found = original(func, recurse, builtin)
        if type(found) is dict and RUNTIME in found:
            found = {name: value for name, value in found.items() if name != RUNTIME}
        return found

    return globalvars
