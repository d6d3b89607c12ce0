"""torch adapter: nn.Module, Optimizer, the LR schedulers and GradScaler state_dict()/load_state_dict().

``state_dict()`` returning live tensors is documented PyTorch behaviour
(pytorch/pytorch#34765): sharing alone is never reported, so the alias probe is
off for these owners. What is reported is a *change*: a kept state dict that
comes back through ``load_state_dict`` changed since it was taken (the
``best = model.state_dict()`` mistake) or is written by ``torch.save``/``pickle.dump`` after its
owner changed it (the saved "best" checkpoint holds the last weights), or what was loaded being written into
afterwards (``load_state_dict(sd, assign=True)`` keeps the caller's tensors;
pytorch/rl#3966). Fingerprints hash tensor bytes in place: no copy of a parameter.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import torch

import aliascheck.ledger as ledger
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
    _transparent_to_dynamo()
    return undo_all(undos)


_polyfilled: set[int] = set()


def _transparent_to_dynamo() -> None:
    """``torch.compile`` traces marked code as it traces the program's own. Each question the marked
    code asks (:mod:`aliascheck.gate`) is answered "nothing to look at" inside a graph, so dynamo
    folds every inserted statement away and builds the graph a plain run builds: ``fullgraph=True``
    compiles, and nothing falls back to eager. Keeps inside compiled code are not looked at (the
    graph runs instead of the code). Registered once per process: a polyfill is used only when
    dynamo traces the gate, which only marked code calls."""
    from aliascheck.boundary import runtime as boundary

    substitute = getattr(torch.compiler, "substitute_in_graph", None)
    if substitute is None:  # torch before 2.5: compiled code graph-breaks at the marked statements
        return
    gates = boundary._gates
    answers: dict[str, Callable[..., Any]] = {
        "keep": lambda value, keeper, watch=True, loop_site=None, site=0: False,
        "watching": lambda obj: False,
        "buffer": lambda obj: False,
        "buffer_or_watched": lambda value, keeper: False,
        "returning": lambda value: False,
        "refilled": lambda value, anyhow=False: False,
        "bind": lambda value, *receiver: False,
        "passes": lambda site, callee, *names: False,
        "pended": lambda site: False,
        "receiver": lambda method: None,
        "loop": lambda iterable, site: iterable,
    }
    for name, answer in answers.items():
        original = getattr(gates, name)
        if id(original) not in _polyfilled:
            substitute(original, skip_signature_check=True)(answer)
            _polyfilled.add(id(original))
    if id(boundary.through) not in _polyfilled:  # a lambda's keep: the keep's own result
        substitute(boundary.through, skip_signature_check=True)(lambda result, *rest, **named: result)
        _polyfilled.add(id(boundary.through))


def _saving(original: Any) -> Any:
    """``torch.save``: a worker thread serialising what it was handed (a background checkpoint writer)
    has the tensors judged against the hand-off first (the messages adapter's late serialisation); a
    snapshot a state method handed over is judged as it is written (rule *Saved*)."""

    @functools.wraps(original)
    def save(*args: Any, **kwargs: Any) -> Any:
        # Not imported: no message was recorded, nothing is being serialised late (a child process).
        obj = args[0] if args else kwargs.get("obj")
        log = sys.modules.get("aliascheck.plugins.message_log")
        if log is not None and (log._serialising or log._taken_parts):
            log.serialised(obj)
        if (led := ledger.current) is not None:
            led.saved(obj)
        return original(*args, **kwargs)

    return save
