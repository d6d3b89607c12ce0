"""torchdata.stateful_dataloader adapter: StatefulDataLoader, its iterators and samplers.

``StatefulDataLoader.state_dict()`` gathers the sampler's and the dataset's state
(``num_workers=0``: in this process; the dataset's own ``state_dict()`` is the
user's class, found by discovery). Every class of the package that defines a state
protocol is watched; the package is trusted (its state shares sampler and dataset
state by design), so only a change of something still held is reported.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

import torchdata.stateful_dataloader as package

from aliascheck.discovery import watch_all
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import undo_all
from aliascheck.probe import trust

REQUIRES = "torchdata.stateful_dataloader"


def classes() -> list[type]:
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found += [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__]
    return found


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    return undo_all([watch_all(classes()), trust(package.__name__)])
