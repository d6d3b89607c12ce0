"""aliascheck's own work in this thread: what it runs of the user's code is never a new handover.

A fingerprint pickles the value, and pickling calls the state methods of the objects
inside (``__getstate__``, ``__reduce_ex__``). Those calls are part of the handover
being recorded: if the wrapped methods recorded them again, each would fingerprint
its own state, which calls the next object's ``__getstate__``, and a graph with a
back reference (a tree's ``parent``) would never finish. Every wrapper asks
:func:`busy` first and, inside aliascheck's own work, calls the original alone.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator

_state = threading.local()


def busy() -> bool:
    """Whether this thread is inside aliascheck's own work (a fingerprint, a check)."""
    return _state.__dict__.get("depth", 0) > 0


def enter() -> None:
    _state.depth = _state.__dict__.get("depth", 0) + 1


def leave() -> None:
    _state.depth -= 1


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Nothing aliascheck looks at may warn into the user's session.

    A scan of every module's names touches deprecated objects (``isinstance()`` on
    ``torch.distributed.reduce_op`` warns), and a project's ``filterwarnings = error``
    would turn that into an INTERNALERROR.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
