"""torch adapter: nn.Module and Optimizer state_dict()/load_state_dict().

``state_dict()`` returning live tensors is documented PyTorch behaviour
(pytorch/pytorch#34765): sharing alone is never reported, so the alias probe is
off for these owners. What is reported is a *change*: a kept state dict that
comes back through ``load_state_dict`` changed since it was taken (the
``best = model.state_dict()`` mistake), or what was loaded being written into
afterwards (``load_state_dict(sd, assign=True)`` keeps the caller's tensors;
pytorch/rl#3966). Fingerprints hash tensor bytes in place: no copy of a parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import instrument, undo_all
from aliascheck.probe import trust

REQUIRES = "torch"


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    undos = []
    for cls in (torch.nn.Module, torch.optim.Optimizer):
        undos.append(instrument(cls, state=("state_dict",), load=("load_state_dict",)))
        undos.append(trust(cls))
    return undo_all(undos)
