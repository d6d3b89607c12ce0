"""Namespaces, frames, code objects and line numbers of the project's code."""

from __future__ import annotations

import ast
import dis
import inspect
import sys
import textwrap
import traceback

import probelib as p


def _line(text: str) -> int:
    with open(p.__file__) as f:
        hits = [n for n, line in enumerate(f, 1) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def _source_names(fn) -> set[str]:
    code = fn.__code__
    return set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)


def _bound_by_source() -> set[str]:
    """The names probelib's own top-level statements bind (defs, classes, imports, assignments)."""
    tree = ast.parse(inspect.getsource(p))
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


# What the import system and ``from __future__ import annotations`` put in every module.
MODULE_DUNDERS = {"__annotations__", "__name__", "__doc__", "__package__", "__loader__", "__spec__", "__file__",
                  "__cached__", "__builtins__"}


def test_module_namespace_has_only_source_names() -> None:
    assert [n for n in vars(p) if n.startswith("__aliascheck") or "@" in n] == []
    assert set(vars(p)) - MODULE_DUNDERS == _bound_by_source()


def _globals_loaded(code) -> set[str]:
    """The global (and builtin) names a code object and the code inside it look up."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            names |= _globals_loaded(const)
    return names


def test_module_global_names_of_code() -> None:
    """The code looks up the globals its source names, and nothing a program could bind: the one
    name more under --aliascheck is the runtime's, which no source can write."""
    for fn in (p.append_prop, p.set_item, p.for_over, p.bind_call, p.copy_of, p.run_exec, p.build_ring):
        module = compile(textwrap.dedent(inspect.getsource(fn)), "<probe>", "exec")
        source = next(c for c in module.co_consts if hasattr(c, "co_code"))
        extra = _globals_loaded(fn.__code__) - _globals_loaded(source)
        assert not [n for n in extra if n.isidentifier()], fn.__name__
        assert not [n for n in fn.__code__.co_names if n.startswith("__aliascheck")], fn.__name__
    keep, _ = p.make_lambda()
    assert keep.__code__.co_freevars == ("acc",)


def test_f_locals_are_source_names() -> None:
    names = p.locals_of_shapes(p.Counted(), p.LoggingMap())
    assert names == ["d", "obj", "out", "res", "x"]
    assert set(names) <= _source_names(p.locals_of_shapes)


def test_code_shape_of_marked_function() -> None:
    """Arguments, locals and lines as written (temporaries, as pytest's assertion rewriting makes
    them, are ``@``-named: no source can name or rebind them)."""
    code = p.append_prop.__code__
    assert code.co_varnames[:2] == ("obj", "out") and code.co_argcount == 1
    assert not [n for n in code.co_varnames[2:] if n.isidentifier()]
    assert code.co_firstlineno == _line("def append_prop(")
    assert [ln for _, _, ln in code.co_lines() if ln is not None][-1] == _line("def append_prop(") + 3


def test_traceback_line_of_raising_setitem() -> None:
    summary = p.raise_in_setitem()
    assert summary.lineno == _line("# RAISE-IN-SETITEM")
    assert summary.name == "__setitem__"


def test_traceback_lines_after_keep() -> None:
    frames = p.raise_after_keep()
    assert [(f.name, f.lineno) for f in frames] == [("raise_after_keep", _line("# RAISE-AFTER"))]


def test_traceback_line_of_raising_keep() -> None:
    d = p.Refusing()
    try:
        p.set_item(d, "k", [1])  # type: ignore[arg-type]
    except KeyError as e:
        frames = traceback.extract_tb(e.__traceback__)
    assert [(f.name, f.lineno) for f in frames[1:]] == [("set_item", _line("    d[k] = v")),
                                                         ("__setitem__", _line("# RAISE-IN-SETITEM"))]


def test_getsource_unchanged() -> None:
    assert inspect.getsource(p.set_item) == "def set_item(d: LoggingMap, k: object, v: object) -> None:\n    d[k] = v\n"


def test_exception_context_unchanged() -> None:
    try:
        try:
            raise KeyError("first")
        except KeyError:
            out: list[object] = []
            out.append(p.Counted().make(1))
            raise ValueError("second") from None
    except ValueError as e:
        assert e.__context__ is not None and e.__suppress_context__
        assert type(e.__context__) is KeyError
    assert sys.exc_info() == (None, None, None)


def test_f_locals_mid_function() -> None:
    seen = p.locals_mid_statement(p.Counted(), p.LoggingMap())
    assert seen == [["d", "obj", "out", "seen"], ["d", "obj", "out", "seen"], ["d", "obj", "out", "res", "seen"],
                    ["d", "obj", "out", "res", "seen", "x"]]


def test_f_locals_seen_by_a_call_the_statement_makes() -> None:
    """A callee reading its caller's locals while the statement runs (a traceback's ``show_locals`` in
    an ``except`` block) sees the source's names, none of the marking's temporaries."""
    assert p.locals_seen_by_a_librarys_call(p.Counted()) == ["frame", "obj"]
    assert p.locals_seen_through_a_chain(p.Counted()) == ["frame", "holder", "obj"]


def test_line_events() -> None:
    events = p.line_events(p.traced_shapes, p.Counted(), p.LoggingMap())
    assert events == LINE_EVENTS


# traced_shapes, as sys.settrace sees it: (event, line - the def's line).
LINE_EVENTS = [("line", 1), ("line", 2), ("line", 3), ("line", 4), ("line", 5), ("line", 6),
               ("line", 5), ("line", 7), ("line", 8), ("line", 9), ("return", 9)]


def test_code_lines_within_function() -> None:
    for fn in (p.append_prop, p.set_item, p.traced_shapes, p.build_ring, p.locals_of_shapes, p.make_lambda):
        lines, first = inspect.getsourcelines(fn)
        numbers = {ln for _, _, ln in fn.__code__.co_lines() if ln is not None}
        assert numbers <= set(range(first, first + len(lines))), fn.__name__
