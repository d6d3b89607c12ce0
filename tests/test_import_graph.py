"""aliascheck's modules import each other without a cycle, counting every import statement.

Every module the distribution installs (the packages ``pyproject.toml`` lists, with
``plugins/`` as ``aliascheck.plugins``) is parsed, and every ``import`` in it counts:
at the top, inside a function, under ``if TYPE_CHECKING:``. A function-level import
that closes a cycle works only while neither module needs the other at its top, and it
says that some code is in the wrong module. Imports by name at run time
(``importlib.import_module``: the lazy public names, the bundled adapters) are not
statements and are not counted.
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from collections.abc import Iterable, Mapping
from itertools import pairwise
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - pytest depends on tomli for Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def distribution_modules() -> dict[str, Path]:
    """Each installed module's import name and source file, as setuptools maps them."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    where = setup.get("package-dir", {})
    found = {}
    for package in setup["packages"]:
        for path in sorted((ROOT / where.get(package, package.replace(".", "/"))).glob("*.py")):
            found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return found


def imports(module: str, is_package: bool, source: str, known: Iterable[str]) -> dict[str, int]:
    """The modules of *known* that *source* (the text of *module*) imports, each with the line of its first import.

    ``from X import y`` imports the module ``X.y`` when there is one (``from . import
    cli``), else ``X``; an import of a module outside *known* names its nearest known
    package, or nothing.
    """
    known = set(known)
    here = module if is_package else module.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                found[name] = min(found.get(name, node.lineno), node.lineno)
    return found


def import_graph(modules: Mapping[str, Path]) -> dict[str, dict[str, int]]:
    return {name: imports(name, path.name == "__init__.py", path.read_text(encoding="utf-8"), modules)
            for name, path in modules.items()}


def knots(graph: Mapping[str, Iterable[str]]) -> list[tuple[list[str], list[str]]]:
    """Each strongly connected part of *graph* (its nodes reach each other): one shortest
    cycle in it (``[a, b, ..., a]``) and all its nodes."""
    found: list[tuple[list[str], list[str]]] = []
    covered: set[str] = set()
    for node in sorted(graph):
        if node in covered:
            continue
        reached = _reachable(graph, node)
        if node not in reached:
            continue
        knot = {other for other in reached if node in _reachable(graph, other)}
        covered |= knot
        found.append((_shortest_path(graph, node, node), sorted(knot)))
    return found


def _reachable(graph: Mapping[str, Iterable[str]], start: str) -> set[str]:
    """The nodes one or more edges away from *start*."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _shortest_path(graph: Mapping[str, Iterable[str]], start: str, goal: str) -> list[str]:
    """The shortest path of one or more edges from *start* to *goal* (which is reachable)."""
    parent: dict[str, str] = {}
    todo = deque([start])
    while goal not in parent:
        node = todo.popleft()
        for nxt in sorted(graph.get(node, ())):
            if nxt not in parent:
                parent[nxt] = node
                todo.append(nxt)
    path = [goal, parent[goal]]
    while path[-1] != start:
        path.append(parent[path[-1]])
    return path[::-1]


def describe(cycle: list[str], knot: list[str], graph: Mapping[str, Mapping[str, int]],
             modules: Mapping[str, Path]) -> str:
    """``a -> b (a.py:3) -> a (b.py:7)``: each step with the import that makes it; then the
    knot's other modules, which more cycles go through."""
    steps = [cycle[0]]
    for src, dst in pairwise(cycle):
        steps.append(f"{dst} ({modules[src].relative_to(ROOT).as_posix()}:{graph[src][dst]})")
    others = [name for name in knot if name not in cycle]
    return " -> ".join(steps) + (f"\n    and through {', '.join(others)}" if others else "")


def test_no_module_of_the_distribution_is_in_an_import_cycle() -> None:
    modules = distribution_modules()
    graph = import_graph(modules)
    # the parse saw the real graph: a module-level, a function-level and an adapter's import
    assert "aliascheck.errors" in graph["aliascheck.cli"]
    assert "aliascheck.plugins.generic" in graph["aliascheck.check"]
    assert "aliascheck.hookspecs" in graph["aliascheck.plugins.torch"]
    found = [describe(cycle, knot, graph, modules) for cycle, knot in knots(graph)]
    assert not found, "import cycles (each step names the import that makes it):\n  " + "\n  ".join(found)


def test_the_cycle_finder_reports_each_knot_with_a_shortest_cycle_and_none_in_a_dag() -> None:
    assert knots({"a": ["b", "c"], "b": ["c"], "c": ["d"]}) == []
    graph = {"a": ["b"], "b": ["c", "x"], "c": ["a", "b", "d"], "d": ["a"], "x": ["y"], "y": ["x", "z"], "z": []}
    assert knots(graph) == [(["a", "b", "c", "a"], ["a", "b", "c", "d"]), (["x", "y", "x"], ["x", "y"])]


def test_a_cycle_is_shown_with_the_import_that_makes_each_step() -> None:
    graph = {"a": {"b": 3}, "b": {"a": 7, "c": 9}, "c": {"b": 1}}
    modules = {name: ROOT / f"{name}.py" for name in graph}
    shown = describe(["a", "b", "a"], ["a", "b", "c"], graph, modules)
    assert shown == "a -> b (a.py:3) -> a (b.py:7)\n    and through c"


def test_imports_are_found_at_any_depth_and_relative_ones_resolved() -> None:
    known = {"pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.c", "pkg.sub.d", "pkg.sub.e"}
    source = (
        "import os\n"
        "from . import c, NAME\n"                 # 2: the submodule pkg.sub.c; a name of pkg.sub
        "from .. import b\n"                      # 3: pkg.b
        "from ..a import thing\n"                 # 4: pkg.a
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    import pkg.sub.d.missing as m\n"     # 7: its nearest known module, pkg.sub.d
        "def f():\n"
        "    from pkg import a\n"                 # 9: pkg.a again: the first line is kept
        "    import pkg.sub.e\n"                  # 10: the module itself: no edge
    )
    assert imports("pkg.sub.e", False, source, known) == {
        "pkg.sub.c": 2, "pkg.sub": 2, "pkg.b": 3, "pkg.a": 4, "pkg.sub.d": 7}
    assert imports("pkg.sub", True, "from . import c\nfrom .c import x\n", known) == {"pkg.sub.c": 1}
