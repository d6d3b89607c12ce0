"""Finding and installing adapters: bundled ones by name, third-party ones by entry point.

An adapter is installed once its framework has been imported (checked again
before every test), so a session that never imports torch never pays for it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

import pluggy

import aliascheck.hookspecs as hookspecs

from .config import Options

ENTRY_POINT_GROUP = "aliascheck.plugins"

# name -> (module, the framework module it needs imported first)
BUNDLED = {
    "torchdata": ("aliascheck.plugins.torchdata", "torchdata.nodes"),
    "cloudpickle": ("aliascheck.plugins.cloudpickle", "cloudpickle"),
    "torch": ("aliascheck.plugins.torch", "torch"),
    "stateful_dataloader": ("aliascheck.plugins.stateful_dataloader", "torchdata.stateful_dataloader"),
    "generic": ("aliascheck.plugins.generic", None),
}


class Adapters:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.pm = pluggy.PluginManager("aliascheck")
        self.pm.add_hookspecs(hookspecs)
        self.pending: dict[str, tuple[str | None, str | None, Any]] = {}
        self.installed: list[str] = []
        self.problems: list[str] = []
        self._undos: list[Callable[[], None]] = []
        off = options.disabled_adapters
        if "all" in off:
            return
        for name, (module, requires) in BUNDLED.items():
            if name not in off:
                self.pending[name] = (module, requires, None)
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name not in off and ep.name not in self.pending:
                self.pending[ep.name] = (None, None, ep)

    def refresh(self) -> None:
        """Install every pending adapter whose framework is now imported."""
        for name, (module, requires, ep) in list(self.pending.items()):
            if requires is not None and requires not in sys.modules:
                continue
            del self.pending[name]
            try:
                plugin = ep.load() if ep is not None else importlib.import_module(module)  # type: ignore[arg-type]
            except ModuleNotFoundError as exc:
                if module is not None and exc.name == module:
                    continue  # a bundled adapter not shipped yet
                self.problems.append(f"adapter {name!r} not loaded: {exc}; pip install 'aliascheck[{name}]'")
                continue
            self.pm.register(plugin, name=name)
            undo = plugin.aliascheck_install(options=self.options) if hasattr(plugin, "aliascheck_install") else None
            if undo is not None:
                self._undos.append(undo)
            self.installed.append(name)

    def step_iterator(self, root: Any) -> Any:
        return self.pm.hook.aliascheck_step_iterator(root=root)

    def teardown(self, ledger: Any) -> None:
        """Each adapter's own teardown check (what it recorded outside the ledger's records)."""
        self.pm.hook.aliascheck_teardown(ledger=ledger)

    def uninstall(self) -> None:
        while self._undos:
            self._undos.pop()()
        for name in self.installed:
            self.pm.unregister(name=name)
        self.installed.clear()
