"""torch adapter: nn.Module, Optimizer, the LR schedulers and GradScaler state_dict()/load_state_dict().

``state_dict()`` returning live tensors is documented PyTorch behaviour
(pytorch/pytorch#34765): sharing alone is never reported, so the alias probe is
off for these owners. What is reported is a *change*: a kept state dict that
comes back through ``load_state_dict`` changed since it was taken (the
``best = model.state_dict()`` mistake), or what was loaded being written into
afterwards (``load_state_dict(sd, assign=True)`` keeps the caller's tensors;
pytorch/rl#3966). Fingerprints hash tensor bytes in place: no copy of a parameter.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import torch

from aliascheck.discovery import subclasses, watch_all
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import instrument, patch, undo_all
from aliascheck.probe import trust

REQUIRES = "torch"


# Library classes with a state protocol, watched whatever the discovery scope. Their
# state_dict() shares live lists and the lr_lambdas' __dict__ by design (trusted: only a
# change of something still held is reported).
LIBRARY: tuple[type, ...] = (torch.optim.lr_scheduler.LRScheduler, torch.amp.GradScaler)


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    undos = []
    for cls in (torch.nn.Module, torch.optim.Optimizer):
        undos.append(instrument(cls, state=("state_dict",), load=("load_state_dict",)))
        undos.append(trust(cls))
    for library in LIBRARY:
        undos.append(watch_all(subclasses(library)))
        undos.append(trust(library))
    undos.append(patch(torch, "save", _saving))
    return undo_all(undos)


def _saving(original: Any) -> Any:
    """``torch.save``: a worker thread serialising what it was handed (a background checkpoint writer)
    has the tensors judged against the hand-off first (the messages adapter's late serialisation)."""

    @functools.wraps(original)
    def save(*args: Any, **kwargs: Any) -> Any:
        # Not imported: no message was recorded, nothing is being serialised late (a child process).
        log = sys.modules.get("aliascheck.plugins.message_log")
        if log is not None and (log._serialising or log._taken_parts):
            log.serialised(args[0] if args else kwargs.get("obj"))
        return original(*args, **kwargs)

    return save
