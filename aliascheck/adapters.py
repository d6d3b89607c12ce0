"""Finding and installing adapters: bundled ones by name, third-party ones by entry point.

An adapter is installed once its framework has been imported (checked again
before every test), so a session that never imports torch never pays for it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pluggy

import aliascheck.guard as guard
import aliascheck.hookspecs as hookspecs

from .config import Options
from .errors import UsageError

ENTRY_POINT_GROUP = "aliascheck.plugins"

# name -> (module, the framework module it needs imported first)
BUNDLED = {
    "torchdata": ("aliascheck.plugins.torchdata", "torchdata.nodes"),
    "cloudpickle": ("aliascheck.plugins.cloudpickle", "cloudpickle"),
    "dill": ("aliascheck.plugins.dill", "dill"),
    "torch": ("aliascheck.plugins.torch", "torch"),
    "stateful_dataloader": ("aliascheck.plugins.stateful_dataloader", "torchdata.stateful_dataloader"),
    "generic": ("aliascheck.plugins.generic", None),
    "messages": ("aliascheck.plugins.messages", None),
    "asyncio": ("aliascheck.plugins.asyncio_queue", "asyncio"),
    "caches": ("aliascheck.plugins.caches", None),
    "mocks": ("aliascheck.plugins.mocks", "unittest.mock"),
}
# Not started in a child process: their install costs a child ~40 ms of start-up (messages
# imports multiprocessing.queues and concurrent.futures.process; caches rescans the project's
# modules), and children rarely pass messages or keep caches the test could see.
PARENT_ONLY = frozenset({"messages", "asyncio", "caches", "mocks"})


class Adapters:
    """*plugins*: third-party adapters as ``(name, "module:attr")``, when the caller knows them
    already (a child process gets its session's list, not an entry-point scan)."""

    def __init__(self, options: Options, plugins: Sequence[tuple[str, str]] | None = None,
                 child: bool = False) -> None:
        self.options = options
        self.pm = pluggy.PluginManager("aliascheck")
        self.pm.add_hookspecs(hookspecs)
        self.pending: dict[str, tuple[str | None, str | None, Any]] = {}
        self.installed: list[str] = []
        self.problems: list[str] = []
        self._undos: list[Callable[[], None]] = []
        self.plugins: list[tuple[str, str]] = []
        off = options.disabled_adapters
        if "all" in off:
            return
        for name, (module, requires) in BUNDLED.items():
            if name not in off and not (child and name in PARENT_ONLY):
                self.pending[name] = (module, requires, None)
        if plugins is None:
            from importlib.metadata import entry_points  # ~20 ms: not in a child's start-up

            plugins = [(ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP)]
        self.plugins = list(plugins)
        for name, value in self.plugins:
            if name not in off and name not in self.pending:
                self.pending[name] = (None, None, value)

    def refresh(self) -> None:
        """Install every pending adapter whose framework is now imported."""
        for name, (module, requires, ep) in list(self.pending.items()):
            if requires is not None and requires not in sys.modules:
                continue
            del self.pending[name]
            try:
                plugin = _load(ep) if ep is not None else importlib.import_module(module)  # type: ignore[arg-type]
            except ModuleNotFoundError as exc:
                if module is not None and exc.name == module:
                    continue  # a bundled adapter not shipped yet
                self.problems.append(f"adapter {name!r} not loaded: {exc}; pip install 'aliascheck[{name}]'")
                continue
            self.pm.register(plugin, name=name)
            try:
                with guard.quiet():  # an install scans the project's modules: nothing may warn into the session
                    undo = plugin.aliascheck_install(options=self.options) if hasattr(plugin, "aliascheck_install") \
                        else None
            except UsageError:  # the user's configuration (a bad aliascheck_stateful line): theirs to fix
                self.pm.unregister(name=name)
                raise
            except Exception as exc:  # an adapter's own bug: the run goes on without it, and says so
                self.pm.unregister(name=name)
                self.problems.append(f"adapter {name!r} not installed: {type(exc).__name__}: {exc}")
                continue
            if undo is not None:
                self._undos.append(undo)
            self.installed.append(name)

    def step_iterator(self, root: Any) -> Any:
        return self.pm.hook.aliascheck_step_iterator(root=root)

    def watch_imports(self) -> None:
        """Install each pending adapter as soon as its framework is imported (a child process,
        where no test begins to look again)."""
        if any(requires for _, requires, _ in self.pending.values()):
            sys.meta_path.insert(0, _AfterImport(self))

    def teardown(self, ledger: Any) -> None:
        """Each adapter's own teardown check (what it recorded outside the ledger's records)."""
        self.pm.hook.aliascheck_teardown(ledger=ledger)

    def uninstall(self) -> None:
        while self._undos:
            self._undos.pop()()
        for name in self.installed:
            self.pm.unregister(name=name)
        self.installed.clear()


def _load(value: str) -> Any:
    """An entry point's object from its ``module:attr`` value."""
    module, _, attr = value.partition(":")
    obj = importlib.import_module(module.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    return obj


class _AfterImport:
    """A ``sys.meta_path`` finder that calls :meth:`Adapters.refresh` once a framework an adapter
    waits for has been imported (no ``importlib.abc`` base: it costs a child 5 ms to import)."""

    def __init__(self, adapters: Adapters) -> None:
        self.adapters = adapters
        self._busy = False

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if self._busy or name not in {requires for _, requires, _ in self.adapters.pending.values()}:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._busy = False
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        adapters, exec_module = self.adapters, loader.exec_module

        def exec_then_install(module: Any) -> None:
            exec_module(module)
            try:
                adapters.refresh()
            except Exception as exc:  # a child keeps running; the adapter is said missing
                adapters.problems.append(f"adapter for {name} not installed in a child: {exc}")

        loader.exec_module = exec_then_install
        return spec
