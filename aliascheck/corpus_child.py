"""Run corpus variants under a Session, one after another, each verdict printed as one JSON line.

    python -m aliascheck.corpus_child ENTRY VARIANT [ENTRY VARIANT ...]

ENTRY is an entry directory (or an id in the checkout's corpus). Each variant runs
as ``__main__`` with ``runpy.run_path``, as ``python corpus/<id>/buggy.py`` would,
so the classes it defines are dynamic classes, as in the cloudpickle reports.
The frameworks it uses are imported first, so their adapters are installed when
the test begins, as they are after pytest's collection. Whatever a variant prints
goes to stderr; stdout carries one JSON object per variant:
``{"id", "variant", "state": ok|error|skip, "error", "findings", "seconds", "threads"}``.

Between variants the child restores ``sys.path``, ``sys.argv``, the warning
filters and the working directory, forgets the modules loaded from the entry's
directory, stops the torchdata nodes the variant left running and lists any
thread still alive, so that several variants can share one process.
"""

from __future__ import annotations

import ast
import builtins
import gc
import importlib
import importlib.util
import json
import os
import runpy
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .adapters import BUNDLED
from .config import Options
from .corpus import CorpusError, Entry, Variant, corpus_dir, load_entry
from .session import Session

# What each family needs imported before the test begins (its adapter's framework).
FAMILY_IMPORTS = {"torchdata": ("torch", "torchdata.nodes"), "torch": ("torch",),
                  "cloudpickle": ("cloudpickle",), "generic": (), "messages": (), "caches": (), "processes": (),
                  "boundary": ()}
EXTRAS = {"torch": "torch", "torchdata": "torchdata", "cloudpickle": "cloudpickle", "distributed": "dask",
          "dask": "dask", "numpy": "numpy"}
# Dask keeps one process-wide offload thread by design (tests/test_dask.py says the same).
LONG_LIVED = ("Dask-Offload",)
MAX_ERROR_LINES = 30


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or len(args) % 2:
        print("usage: python -m aliascheck.corpus_child ENTRY VARIANT [ENTRY VARIANT ...]", file=sys.stderr)
        return 2
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the variants' prints go to stderr; stdout carries only verdicts
    for ref, name in zip(args[::2], args[1::2], strict=True):
        try:
            entry = _entry(ref)
            if name not in entry.variants:
                raise CorpusError(f"{entry.id} has no variant {name!r} (it has {', '.join(entry.variants)})")
            outcome = run_variant(entry, entry.variants[name])
        except CorpusError as exc:
            outcome = {"state": "error", "error": str(exc), "findings": [], "seconds": 0.0, "threads": []}
        except Exception as exc:  # aliascheck's own bug: report it for this variant, go on with the next
            outcome = {"state": "error", "error": f"aliascheck internal error: {_traceback(exc, None)}",
                       "findings": [], "seconds": 0.0, "threads": []}
        out.write(json.dumps({"id": Path(ref).name, "variant": name, **outcome}) + "\n")
        out.flush()
    out.close()
    return 0


def _entry(ref: str) -> Entry:
    path = Path(ref)
    return load_entry(path if path.is_dir() else corpus_dir(None) / ref)


def run_variant(entry: Entry, variant: Variant) -> dict[str, Any]:
    """Run one variant under a fresh Session; the outcome as plain data."""
    missing = [m for m in (*FAMILY_IMPORTS[entry.family], *entry.requires) if not _importable(m)]
    if missing:
        top = missing[0].partition(".")[0]
        hint = f" (pip install 'aliascheck[{EXTRAS[top]}]')" if top in EXTRAS else ""
        return {"state": "skip", "error": f"needs {missing[0]}{hint}", "findings": [], "seconds": 0.0,
                "threads": []}
    if variant.project:
        return run_project(entry, variant)
    for module in frameworks(entry, variant):
        importlib.import_module(module)
    before = set(threading.enumerate())
    start = time.perf_counter()
    state, error, findings = "ok", "", []
    namespace: dict[str, Any] = {}
    roots: list[Any] = []
    imported = tuple(s for s in entry.stateful if not s.startswith("__main__:"))
    # The entry's directory is the project: its classes are found with no configuration.
    session = Session(Options(enabled=True, steps=entry.steps, stateful=imported, roots=(str(entry.dir),)))
    session.start(children=True)  # worker processes a variant starts report too
    saved = _Saved(entry.dir)
    try:
        sys.path.insert(0, str(entry.dir))  # as `python corpus/<id>/buggy.py` has it
        sys.argv[:] = [str(variant.file)]
        session.begin_test(f"{entry.id}::{variant.name}")
        undos: list[Callable[[], None] | None] = []
        try:
            undos += [_install_hook(entry, session), _watch_script_classes(entry.stateful)]
            session.ledger.owning = True
            namespace = _run(str(variant.file), session)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                state, error = "error", f"the variant exited with {exc.code!r}"
        except Exception as exc:
            state, error = "error", _traceback(exc, variant.file)
        finally:
            session.ledger.owning = False
            for undo in reversed(undos):
                if undo is not None:
                    undo()
        roots = list(session.ledger.roots.values())
        findings = [f.to_json() for f in session.end_test(entry.steps)]
    except Exception as exc:  # aliascheck itself failed (a bad stateful entry, an adapter bug)
        state, error = "error", f"aliascheck: {_traceback(exc, None)}"
    finally:
        session.stop()
        _stop_nodes([*roots, *namespace.values()])
        del namespace, roots, session
        gc.collect()
        saved.restore()
    return {"state": state, "error": error, "findings": findings, "seconds": time.perf_counter() - start,
            "threads": _left_running(before)}


def run_project(entry: Entry, variant: Variant) -> dict[str, Any]:
    """A project variant, run as its users run it: ``python -m pytest --aliascheck`` in its own
    directory (its pyproject.toml configures pytest; no aliascheck configuration). Its tests failing
    is the variant's verdict, not an error: the findings come from the JSON report."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="aliascheck-corpus-") as tmp:
        report = Path(tmp) / "report.json"
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--aliascheck",
                f"--aliascheck-report={report}"]
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
        try:
            proc = subprocess.run(args, cwd=variant.file, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=max(entry.timeout - 5, 5), check=False)
        except subprocess.TimeoutExpired:
            return {"state": "error", "error": f"python -m pytest did not finish in {entry.timeout - 5:.0f} s",
                    "findings": [], "seconds": time.perf_counter() - start, "threads": []}
        sys.stderr.write(proc.stdout)
        # 0: passed, 1: tests failed (a finding fails its test). Anything else is the run's own error.
        if proc.returncode not in (0, 1) or not report.is_file():
            tail = "\n".join(proc.stdout.splitlines()[-MAX_ERROR_LINES:])
            return {"state": "error", "error": f"python -m pytest exited with {proc.returncode}:\n{tail}",
                    "findings": [], "seconds": time.perf_counter() - start, "threads": []}
        findings = json.loads(report.read_text(encoding="utf-8"))["findings"]
    for finding in findings:
        finding.pop("bug", None)
    return {"state": "ok", "error": "", "findings": findings, "seconds": time.perf_counter() - start, "threads": []}


def _run(path: str, session: Session) -> dict[str, Any]:
    """The variant as ``__main__``: marked (its keep sites and copies) when the session marks the project."""
    if session.options.boundary == "on":
        import aliascheck.boundary.rewrite as rewrite

        return rewrite.run_script(path)
    return runpy.run_path(path, run_name="__main__")


def frameworks(entry: Entry, variant: Variant) -> list[str]:
    """The family's frameworks, and every bundled adapter's framework the variant imports."""
    wanted = dict.fromkeys(FAMILY_IMPORTS[entry.family])
    required = {req for _, req in BUNDLED.values() if req}
    for name in _imports(variant.file):
        for req in required:
            if name == req or name.startswith(req + ".") or req.startswith(name + "."):
                if _importable(req):
                    wanted.setdefault(req)
    return list(wanted)


def _imports(path: Path) -> Iterable[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except SyntaxError:
        return  # running it will report that
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def _install_hook(entry: Entry, session: Session) -> Callable[[], None] | None:
    """An entry's ``hook.py``: ``install(session)`` tells aliascheck what to watch; returns the undo."""
    if entry.hook is None:
        return None
    spec = importlib.util.spec_from_file_location(f"_aliascheck_corpus_hook_{entry.id.replace('-', '_')}",
                                                  entry.hook)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    undo: Callable[[], None] | None = module.install(session)
    return undo


def _watch_script_classes(specs: Iterable[str]) -> Callable[[], None] | None:
    """``stateful = ["__main__:Name"]``: the generic adapter for a class the variant itself defines.

    ``aliascheck_stateful`` imports the classes it names when the test begins; a class
    defined by the script does not exist yet, so it is instrumented as it is created.
    """
    names = {spec.partition(":")[2] for spec in specs if spec.startswith("__main__:")}
    if not names:
        return None
    from .plugins.generic import watch_class

    original = builtins.__build_class__
    undos: list[Callable[[], None]] = []

    def build_class(func: Any, name: str, *bases: Any, **kwargs: Any) -> Any:
        cls = original(func, name, *bases, **kwargs)
        if isinstance(cls, type) and cls.__module__ == "__main__" and cls.__qualname__ in names:
            undos.append(watch_class(cls))
        return cls

    builtins.__build_class__ = build_class  # type: ignore[assignment]

    def undo() -> None:
        builtins.__build_class__ = original
        for one in reversed(undos):
            one()

    return undo


def _stop_nodes(objects: Iterable[Any]) -> None:
    """Stop and join the torchdata workers a variant left running (torchdata leaves it to ``__del__``)."""
    if "torchdata.nodes" not in sys.modules:
        return
    from .nodes import shutdown

    for obj in objects:
        if _is_node(obj):
            shutdown(obj)


def _is_node(obj: Any) -> bool:
    """A node or Loader, or one of torchdata's (or aliascheck.nodes') iterators a variant drove directly."""
    from torchdata.nodes import BaseNode, Loader

    if isinstance(obj, (BaseNode, Loader)):
        return True
    module = type(obj).__module__ or ""
    return module.startswith(("torchdata.", "aliascheck.nodes")) and callable(getattr(type(obj), "_shutdown", None))


def _left_running(before: set[threading.Thread]) -> list[str]:
    left = []
    for thread in threading.enumerate():
        if thread in before or thread.name.startswith(LONG_LIVED):
            continue
        thread.join(timeout=1.0)  # one finishing its last iteration; no sleep, a bounded join
        if thread.is_alive():
            left.append(thread.name)
    return sorted(left)


def _traceback(exc: BaseException, script: Path | None) -> str:
    """The traceback from the variant's own frames on (runpy's and ours left out)."""
    frames = list(traceback.extract_tb(exc.__traceback__))
    if script is not None:
        ours = [i for i, f in enumerate(frames) if Path(f.filename) == script]
        if ours:
            frames = frames[ours[0]:]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames),
             *traceback.format_exception_only(type(exc), exc)]
    text = "".join(lines).splitlines()
    return "\n".join(text[-MAX_ERROR_LINES:])


class _Saved:
    """What a variant may change in the process, restored before the next one runs."""

    def __init__(self, directory: Path) -> None:
        self.directory = str(directory.resolve())
        self.path = list(sys.path)
        self.argv = list(sys.argv)
        self.cwd = os.getcwd()
        self.warnings = warnings.catch_warnings()  # the filters a variant may change
        self.warnings.__enter__()

    def restore(self) -> None:
        sys.path[:] = self.path
        sys.argv[:] = self.argv
        os.chdir(self.cwd)
        self.warnings.__exit__(None, None, None)
        for name, module in list(sys.modules.items()):
            origin = getattr(module, "__file__", None) or ""
            if origin and os.path.abspath(origin).startswith(self.directory + os.sep):
                del sys.modules[name]  # an entry's own helper module: the next entry may have one by that name


if __name__ == "__main__":
    sys.exit(main())
