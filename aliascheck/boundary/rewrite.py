"""Import-time marking of the project's keep sites and writes, as pytest rewrites asserts.

The project's own modules (and its test modules, through pytest's assertion rewriter, and a
corpus script) are compiled from a rewritten tree. The source is not changed: inserted code sits
on the line of the statement it belongs to, so tracebacks, ``inspect.getsource``, coverage and
``sys.settrace`` line events see the same lines. The rules (docs/watched.md, *Boundaries*):

- evaluated once, in order: each value the runtime needs is caught in an ``@``-named temporary
  as the statement computes it (``out.append((@ac1 := obj.prop))``), deleted when the statement
  ends; only plain names are read again;
- no names added: the runtime (:mod:`aliascheck.boundary.runtime`) is reached through one builtins name
  no source can write (:data:`RUNTIME`);
- the calls after a statement sit in ``if test: try: ... except: pass``: the test reads only the
  runtime's names and types, and a failure inside never reaches the program;
- a project class's state and load methods record themselves in their own body
  (:func:`_record_in_body`), so no wrapper frame is added.

What is marked: keeps (``r.append(v)``, ``r.insert(i, v)``, ``r[k] = v``, ``r.a = v``), a call's
result bound to a name, shallow copies (``x.copy()``, ``copy.copy(x)``, ``np.copy(x)``), the
project's own writes (in-place methods, slices, augmented and unpacking assignments), calls given
plain names, ``for`` loops over a possible generator, keeps in a ``lambda``, ``class`` statements.

With ``--aliascheck`` off nothing is rewritten: the hook is installed by the session only.
"""

from __future__ import annotations

import ast
import builtins
import collections
import copy
import functools
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import itertools
import os
import re
import sys
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from ..kinds import LOAD_METHODS, STATE_METHODS

# The marked code reaches the runtime (aliascheck.boundary.runtime) through this builtins name, which no
# source can write: a marked module's namespace holds exactly the names its source binds.
RUNTIME = "@aliascheck"
# Temporaries: the values a statement computes, caught as it computes them (``(@ac1 := obj.prop)``),
# so that nothing is evaluated twice; cleared when the statement ends, so nothing lives longer.
TEMP = "@ac"
# Methods that keep their argument in the receiver (the argument index that is kept).
KEEPS = {"append": 0, "appendleft": 0, "insert": 1}
# Methods that change their receiver in place (torch's ``name_`` convention is added by rule).
WRITES = frozenset({"extend", "extendleft", "update", "pop", "popleft", "popitem", "remove", "clear", "sort",
                    "reverse", "discard", "add", "setdefault", "fill", "resize", "put", "itemset",
                    "__setitem__", "__delitem__", "__iadd__", "setflags", "partition", "byteswap"})
COPIES = frozenset({"copy"})  # x.copy(), copy.copy(x), np.copy(x), numpy.copy(x)
# Builtins that keep none of their arguments (or whose result is all that keeps them), and exec/eval,
# whose namespace is the project's own: no look.
PURE = frozenset({"len", "print", "isinstance", "issubclass", "sorted", "sum", "min", "max", "str", "int", "float",
                  "bool", "repr", "id", "type", "range", "enumerate", "list", "dict", "tuple", "set", "frozenset",
                  "getattr", "hasattr", "abs", "round", "any", "all", "format", "hash", "callable", "divmod",
                  "pow", "ord", "chr", "bytes", "vars", "dir", "super", "iter", "next", "zip", "map", "filter",
                  "reversed", "open", "setattr", "delattr", "globals", "locals", "exec", "eval", "compile"})
# A kept value's source when the project built it itself: its own cells (a linked ring's
# ``[prev, next, key, value]``), never handed out by a library.
MADE = -3
# A kept value's source when it is a name the keeping loop writes into and does not bind again: one
# object refilled and kept at each turn (``row["id"] = i; rows.append(row)``).
REUSED = -4
PARAMETER = -2  # a kept value's source when it is the keeping function's parameter: its caller decides
# What a lock is named (``self._lock``, ``cond``, ``mutex``, ``threading.Lock()``): its ``with`` synchronises.
_LOCKISH = re.compile(r"(?i)lock|cond|mutex|sem")
_DISPLAYS = (ast.List, ast.Dict, ast.Set, ast.Tuple)
# Builtins whose result is an atom whatever they are given (C makes it: an int, a bool, a str).
_ATOM_CALLS = frozenset({"len", "id", "hash", "isinstance", "issubclass", "callable", "ord", "chr", "bool"})
_ATOM_CONSTANTS = (int, float, complex, str, bytes, bool, type(None))
_ITERATORS = frozenset({"range", "enumerate", "zip", "reversed", "sorted"})  # builtins a for loop may iterate
_TAKES = frozenset({"pop", "get", "popleft", "popitem", "setdefault"})  # what hands back a container's own item
STATE_NAMES = frozenset(STATE_METHODS)
LOAD_NAMES = frozenset(LOAD_METHODS)
# Methods never given the adopted-state look: object machinery, not the node's work.
MACHINERY = frozenset({"__init__", "__new__", "__del__", "__getattr__", "__getattribute__", "__setattr__",
                       "__delattr__", "__repr__", "__str__", "__eq__", "__ne__", "__hash__", "__init_subclass__",
                       "__class_getitem__", "__reduce__", "__reduce_ex__", "__copy__", "__deepcopy__", "__len__",
                       "__bool__", "__format__", "__dir__", "__sizeof__", "__subclasshook__"})


class Shape(NamedTuple):
    """One statement shape the pass marks: an example (a module's source; its last statement is the
    shape), the runtime calls inserted for it, and what they report."""

    source: str
    inserts: tuple[str, ...]
    reports: str


# The statement shapes and what each inserts (README "What is marked", docs/watched.md's table). Each
# runtime call also sits behind one gate question (GATE, BIND, PASSES, ...) and in ``try``/``except``;
# tests/test_boundary.py marks every example and holds the pass to this table.
SHAPES: tuple[Shape, ...] = (
    Shape("def f(r, v):\n    r.append(v)", ("kept",), "a keep (also appendleft, insert)"),
    Shape("def f(r, k, v):\n    r[k] = v", ("kept",), "a keep, and the project's write into r"),
    Shape("def f(r, v):\n    r.a = v", ("kept",), "a keep, and the project's write into r"),
    Shape("def f(r, v):\n    r.extend(v)", ("wrote",), "the project's own in-place write"),
    Shape("def f(r, v):\n    r[1:2] = v", ("wrote",), "the project's own write into a slice"),
    Shape("def f(r, v):\n    r.a += v", ("wrote",), "the project's own augmented write"),
    Shape("def f(r, k):\n    del r[k]", ("wrote",), "the project's own write: an item deleted (``del r[:]``: emptied)"),
    Shape("def f(g):\n    name = g()", ("bound",), "a call's result bound"),
    Shape("def f(g, h):\n    a, b = g(), h()", ("bound",), "calls' results bound through a tuple target"),
    Shape("def f(it):\n    name = [p for p in it]", ("bound",), "a list of the loop's own objects bound"),
    Shape("def f(envs):\n    name = [e.step(i) for i, e in enumerate(envs)]", ("bound",),
          "the same, through a tuple target"),
    Shape("def f(sd):\n    name = {k: v.cpu() for k, v in sd.items()}", ("bound",),
          "a dict comprehension, by its values"),
    Shape("def test_f(g, h):\n    sd = g()\n    print(sd)\n    h()", ("bound", "last_used"),
          "a test function's name read for the last time (after that statement)"),
    Shape("def f(it, np):\n    name = [np.asarray(p[:2]) for p in it]", ("bound",),
          "a list of views of the loop's objects bound (memory they may share)"),
    Shape("def f(x):\n    name = x.copy()", ("copied",), "a shallow copy"),
    Shape("def f(x):\n    name = dict(x)", ("copied",), "a shallow copy of a mapping"),
    Shape("import copy\ndef f(x):\n    name = copy.copy(x)", ("after", "before", "copied"),
          "a shallow copy, and what the library call kept"),
    Shape("def f(n):\n    name = [[0] * n] * n", ("repeated",), "one object at every position"),
    Shape("def f(g, a):\n    g(a)", ("after", "before"), "what a library call kept of a value it was given"),
    Shape("def f(it):\n    for x in it:\n        pass", ("loop",), "a project generator's items"),
    Shape("def f(buf):\n    yield buf", ("yielded",), "a refill of a yielded buffer a collection holds"),
    Shape("def f(buf, i):\n    yield buf[i]", ("yielded_view",), "a refill of the memory yielded views share"),
    Shape("def f(x):\n    return x.attr", ("returned",), "a refill of a returned buffer held twice"),
    Shape("def f(x, c):\n    return x.attr.copy() if c else x.attr", ("returned",),
          "the same, for the branch taken"),
    Shape("_row = {}\ndef f(line):\n    _row.clear()\n    return _row", ("returned", "wrote"),
          "what the function writes into and keeps past the call, returned again: collected twice"),
    Shape("def f(lines):\n    row = {}\n    for line in lines:\n        row.clear()\n        yield row",
          ("loop", "wrote", "yielded"), "one container the generator refills, yielded again: collected twice"),
    Shape("def f(n):\n    row, rows = {}, []\n    for i in range(n):\n        row['i'] = i\n        rows.append(row)",
          ("kept",), "one container the loop refills, kept at each turn: held at every place"),
    Shape("def f(stream, n):\n    buf, chunks = bytearray(n), []\n    while stream.readinto(buf) == n:\n"
          "        chunks.append(buf)", ("after", "before", "bound", "kept"),
          "one buffer a call in the loop fills, kept at each turn; what the call kept of it"),
    Shape("async def f(g):\n    rows = await g()", ("bound",), "an awaited call's result bound (gather's list)"),
    Shape("def f(r):\n    return lambda v: r.append(v)", ("through",), "a keep in a hook"),
    Shape("class C:\n    def f(self):\n        return self", ("made_class",),
          "nothing for ``return self`` in a class of no base but object: never an array"),
    Shape("class C(Base):\n    def f(self):\n        return self", ("made_class", "returned"),
          "a class with another base may be an array's: its ``return self`` is asked about"),
    Shape("def f(p=[]):\n    return p", ("default_returned",), "a mutable default returned again, refilled"),
    Shape("def f(n, p=[]):\n    return {'n': n, 'p': p}", ("default_returned",),
          "a mutable default put into a new value returned"),
    Shape("class C:\n    def __init__(self, p=[]):\n        self.a = p", ("default_kept", "kept", "made_class"),
          "a mutable default kept by a second object"),
    Shape("import contextvars\nvar = contextvars.ContextVar('v')\ndef f():\n    return var.get()['k']",
          ("bound", "context_got"), "a task's read of a shared context value or default"),
    Shape("class C:\n    def state_dict(self):\n        return {}\n    def load_state_dict(self, sd):\n"
          "        pass\n    def step(self):\n        pass",
          ("ACTIVE", "ADOPTING", "after_call", "load_enter", "load_exit", "made_class", "state_enter", "state_exit"),
          "handovers and loads, recorded in the methods' own bodies; the adopted-state look"),
)


def _in_place(name: str) -> bool:
    return name in WRITES or (name.endswith("_") and not name.startswith("_"))


def _rt(attr: str) -> ast.expr:
    return ast.Attribute(ast.Name(RUNTIME, ast.Load()), attr, ast.Load())


def _name(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def _template(text: str, **parts: ast.expr) -> ast.expr:
    """The expression *text*: its one-letter names are *parts* (names or temporaries, read again at no
    cost to the program), its other capitalised names the runtime's (``@aliascheck.NAME``)."""
    def fill(node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Name) and node.id in parts:
            return copy.copy(parts[node.id])
        if isinstance(node, ast.Name) and node.id[:1].isupper() or isinstance(node, ast.Name) and node.id[:1] == "_":
            return _rt(node.id)
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                setattr(node, field, [fill(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, fill(value))
        return node

    return fill(_clone(_parsed(text)))  # type: ignore[return-value]


@functools.cache
def _parsed(text: str) -> ast.expr:
    """A template parsed once, without locations: its own line 1 is nobody's, the statement's is given."""
    parsed = ast.parse(text, mode="eval").body
    for node in ast.walk(parsed):
        for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if hasattr(node, attr):
                delattr(node, attr)
    return parsed


def _clone(node: Any) -> Any:
    """A copy of a location-free template tree (``copy.deepcopy`` costs ten times more)."""
    if isinstance(node, list):
        return [_clone(n) for n in node]
    if not isinstance(node, ast.AST):
        return node
    new = node.__class__()
    for field in node._fields:
        setattr(new, field, _clone(getattr(node, field, None)))
    return new


TEXT_LIMIT = 240  # a statement's text in a report: a 5 MB data display is not unparsed whole


def _text(node: ast.expr) -> str:
    """The source of *node* as the program wrote it (a temporary's catch left out), its first
    :data:`TEXT_LIMIT` characters and ``...`` when longer."""
    unparser = _Unparser()
    try:
        return unparser.visit(node)
    except _Enough:
        return "".join(unparser._source)[:TEXT_LIMIT] + "..."
    except Exception:
        return "?"


class _Enough(Exception):
    pass


class _Unparser(ast._Unparser):  # type: ignore[name-defined,misc]  # CPython's own, 3.9 to 3.13
    """``ast.unparse`` that shows a temporary's catch ``(@ac1 := x)`` as the ``x`` the program wrote,
    and stops once it wrote more than :data:`TEXT_LIMIT` characters."""

    _written = 0

    def write(self, *text: str) -> None:
        super().write(*text)
        self._written += sum(map(len, text))
        if self._written > TEXT_LIMIT:
            raise _Enough

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        if node.target.id.startswith("@"):
            self.set_precedence(self.get_precedence(node), node.value)
            self.traverse(node.value)
        else:
            super().visit_NamedExpr(node)


def _root(node: ast.expr) -> ast.expr:
    """The name a receiver's chain starts from (``groups`` of ``groups[0]``), None when it starts elsewhere.

    A plain name is read again after the statement: that runs no code of the program's."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return _name(node.id) if isinstance(node, ast.Name) else ast.Constant(None)


def _place(node: ast.AST, where: ast.AST) -> None:
    """Every new node of *node* on *where*'s lines: tracebacks and coverage see the statement's own
    line (the program's own nodes keep theirs, and are not walked: what was inserted into them was
    placed when it was inserted, and :func:`_locate` places anything left)."""
    todo = [node]
    while todo:
        part = todo.pop()
        if "lineno" in part._attributes:
            if hasattr(part, "lineno"):
                continue  # the program's own
            _copy_location(part, where)
        todo.extend(ast.iter_child_nodes(part))


def _copy_location(part: ast.AST, where: ast.AST) -> None:
    part.lineno = where.lineno  # type: ignore[attr-defined]
    part.col_offset = where.col_offset  # type: ignore[attr-defined]
    part.end_lineno = getattr(where, "end_lineno", None)  # type: ignore[attr-defined]
    part.end_col_offset = getattr(where, "end_col_offset", None)  # type: ignore[attr-defined]


def _locate(tree: ast.AST) -> None:
    """Any node still without a location takes its nearest located ancestor's: one walk per module."""
    todo: list[tuple[ast.AST, ast.AST]] = [(child, tree) for child in ast.iter_child_nodes(tree)]
    while todo:
        part, above = todo.pop()
        if "lineno" in part._attributes:
            if hasattr(part, "lineno"):
                above = part
            elif hasattr(above, "lineno"):
                _copy_location(part, above)
                above = part
        todo.extend((child, above) for child in ast.iter_child_nodes(part))


def _guarded(where: ast.AST | None, *body: ast.stmt, test: ast.expr | None = None) -> ast.stmt:
    """``if test: try: body except Exception: pass``: inserted code never changes what the program
    does. The test (the runtime on, by default) reads only the runtime's own names and types, so it
    cannot raise; the ``try`` sits inside it, where the interpreter's line events stay as written
    (a ``try`` right after another one adds a 'line' event)."""
    guarded = ast.Try(body=list(body), handlers=[ast.ExceptHandler(_rt("Exception"), None, [ast.Pass()])],
                      orelse=[], finalbody=[])
    stmt = ast.If(test if test is not None else _rt("_on"), [guarded], [])
    if where is not None:
        _place(stmt, where)
    return stmt


def _call_stmt(fn: str, *args: ast.expr) -> ast.stmt:
    return ast.Expr(ast.Call(_rt(fn), list(args), []))


class _Statement:
    """One marked statement: its temporaries, and the runtime calls that follow it."""

    def __init__(self, marker: Marker) -> None:
        self.marker = marker
        self.temps: list[str] = []
        self.after: list[ast.stmt] = []
        self.final: list[ast.stmt] = []  # runtime calls at the statement's end, whatever happens

    def catch(self, node: ast.expr) -> tuple[ast.expr, ast.expr]:
        """(*node* as the statement now evaluates it, an expression for its value afterwards).

        A plain name is left as written and read again; anything else is caught in a temporary as
        the statement computes it, once and in Python's own order.
        """
        if isinstance(node, ast.Name):
            return node, _name(node.id)
        temp = self.marker.temp()
        self.temps.append(temp)
        caught = ast.NamedExpr(ast.Name(temp, ast.Store()), node)
        _place(caught, node)
        return caught, _name(temp)

    def call(self, fn: str, *args: ast.expr, only: ast.expr | None = None) -> None:
        """``runtime.fn(*args)`` after the statement, [only when *only*]."""
        self.after.append(_guarded(None, _call_stmt(fn, *args), test=only))

    def emit(self, stmt: ast.stmt) -> list[ast.stmt]:
        """The statement, the calls after it, and its temporaries deleted whatever happens: bound
        from the moment the statement computes them to its end, so that a frame's locals and a
        module's namespace hold exactly the source's names at any other time."""
        body: list[ast.stmt] = [stmt, *self.after]
        for node in self.after:
            _place(node, stmt)
        if not self.temps and not self.final:
            return body
        final = _deleted(self.temps) + self.final
        for node in final:
            _place(node, stmt)
        block = ast.Try(body=body, handlers=[], orelse=[], finalbody=final)
        ast.copy_location(block, stmt)
        block.end_lineno, block.end_col_offset = stmt.end_lineno, stmt.end_col_offset
        return [block]


def _deleted(temps: list[str]) -> list[ast.stmt]:
    """``del`` of each temporary, one not bound (the statement raised first) left alone."""
    return [ast.Try(body=[ast.Delete([ast.Name(t, ast.Del())])],
                    handlers=[ast.ExceptHandler(_rt("NameError"), None, [ast.Pass()])], orelse=[], finalbody=[])
            for t in temps]


class Marker(ast.NodeTransformer):
    """Rewrite each keep site, copy and write of a module's statements so that it reports once it ran."""

    def __init__(self, base: int) -> None:
        self.base = base  # the module's first site number (:func:`module_base`)
        self.table: list[tuple[str, str, Any]] = []  # its sites, registered when the module runs
        self.temps = 0
        self.scope = "module"  # module, function or class: a class body's statements are not marked
        # name -> what it was last given by, in the scope being marked: "lib.items(), yielded" for a
        # loop's target, the call text for ``name = call(...)``; a report names it as the giver.
        self.given: dict[str, tuple[str, int]] = {}
        self.module_names: frozenset[str] = frozenset()  # what the module binds (a builtin shadowed)
        self.containers: frozenset[str] = frozenset()  # module names bound only to collections' containers
        self.returning = False  # in a plain function, whose returns of a buffer are looked at
        self.refilled: frozenset[str] = frozenset()  # what the function writes into in place (_refilled)
        self.parameters: frozenset[str] = frozenset()  # the function's parameters' names
        self.plain_class = False  # in a class of no base but object (visit_ClassDef)
        self.plain_self = ""  # a method's first parameter there: ``return self`` hands out no buffer
        self.instance = ""  # a method's first parameter, never bound again: whose returns they are
        self.fresh_yields: set[int] = set()  # its ``yield name`` nodes of a name its loop binds anew
        self.reused: set[int] = set()  # its kept names that a loop refills and keeps at each turn
        self.atoms: frozenset[str] = frozenset()  # the function's names that only ever hold atoms
        self.shadowed: frozenset[str] = frozenset()  # the names the module and the function bind
        # Locals bound to a container the function just made and has not let out since (at the
        # statement being marked): nothing can have recorded one, so no write into it is looked at.
        self.private: frozenset[str] = frozenset()
        self.guarded = 0  # ``with`` blocks around the statement, in its own function
        self.closed: frozenset[str] | None = None  # never private in this function (None: none is)
        self.function = ""  # the name of the function being marked
        # Names and attribute names the module binds to a ContextVar (``request = ContextVar(...)``,
        # ``_map: ContextVar[dict] = ContextVar(...)`` in a class): their ``.get()`` read in an
        # expression is told to the runtime (_context_gets).
        self.context_vars: frozenset[str] = frozenset()
        # The names the module imports: ``name.get()`` (no argument, or None) of one, or of an attribute
        # of one (``ctx.request.get()``), may be another module's ContextVar; the runtime tells by type.
        self.imported: frozenset[str] = frozenset()
        self.own: frozenset[str] = frozenset()  # the names the function being marked binds itself
        # The function's parameters whose default is a new mutable value (``items=[]``) that it never
        # binds again: one object every call that omits the argument gets.
        self.mutable_defaults: frozenset[str] = frozenset()
        # A test function's body, and for each of its statements the names it reads for the last time
        # (:func:`_last_uses`): told to the runtime right after that statement.
        self.last_uses: tuple[list[ast.stmt] | None, dict[int, list[str]]] = (None, {})

    def temp(self) -> str:
        self.temps += 1
        return f"{TEMP}{self.temps}"

    def _site(self, keeper: str, how: str, extra: Any = None) -> int:
        """Number a marked statement: the module's base plus its place in the module's table."""
        self.table.append((keeper, how, extra))
        return self.base + len(self.table) - 1

    # -- scopes ------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        method = self.scope == "class" and not any(
            isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in node.decorator_list)
        saved, saved_scope, self.given, self.scope = self.given, self.scope, {}, "function"
        saved_function, self.function = self.function, node.name
        nodes = _scope_nodes(node.body)  # walked once each: the analyses below read them
        everything = list(ast.walk(node))
        saved_atoms, self.atoms = self.atoms, atom_names(node, self.module_names, nodes, everything)
        own = _binders(nodes)
        signature = node.args
        positional = [*signature.posonlyargs, *signature.args]
        parameters = frozenset(a.arg for a in (*positional, *signature.kwonlyargs, signature.vararg, signature.kwarg)
                               if a is not None)
        saved_own, self.own = self.own, frozenset(own) | parameters
        defaulted = [*zip(positional[len(positional) - len(signature.defaults):], signature.defaults, strict=True),
                     *((a, d) for a, d in zip(signature.kwonlyargs, signature.kw_defaults, strict=True)
                       if d is not None)]
        saved_defaults, self.mutable_defaults = self.mutable_defaults, frozenset(
            a.arg for a, d in defaulted if _new_mutable(d) and a.arg not in own)
        saved_shadowed, self.shadowed = self.shadowed, self.module_names | own
        # collections' names the function (or an enclosing one) does not bind again itself
        saved_containers, self.containers = self.containers, self.containers - own
        saved_private, self.private = self.private, frozenset()
        saved_guarded, self.guarded = self.guarded, 0
        saved_closed, self.closed = self.closed, _closed_names(everything, nodes)
        # A plain function's returns of an array or tensor are told to the runtime (_return); not a
        # generator's (a yield is), nor a state method's (the handover model's).
        generator = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes)
        saved_returning, self.returning = self.returning, node.name not in STATE_NAMES | LOAD_NAMES and not generator
        saved_refilled = (self.refilled, self.fresh_yields, self.parameters, self.plain_self, self.reused,
                          self.instance)
        self.instance = positional[0].arg if method and positional and positional[0].arg not in own else ""
        self.plain_self = (positional[0].arg if method and self.plain_class and positional
                           and positional[0].arg not in own else "")
        self.refilled, self.parameters = _refilled(nodes), parameters
        self.fresh_yields = _fresh_yields(nodes) if generator else set()
        self.reused = _reused_keeps(nodes)
        saved_last = self.last_uses
        test = node.name.startswith("test") and (saved_scope == "module" or (saved_scope == "class" and method))
        self.last_uses = (node.body, _last_uses(node, parameters)) if test and not generator else (None, {})
        for arg in (*positional, *signature.kwonlyargs):
            self.given[arg.arg] = ("", PARAMETER)  # the caller decides where it came from
        if method and positional:  # a project class's own instance: what it holds is the project's
            self.given[positional[0].arg] = ("", MADE)
        try:
            return self.generic_visit(node)
        finally:
            self.given, self.scope, self.atoms, self.shadowed = saved, saved_scope, saved_atoms, saved_shadowed
            self.private, self.closed, self.function = saved_private, saved_closed, saved_function
            self.guarded = saved_guarded
            self.returning, self.containers = saved_returning, saved_containers
            self.own, self.mutable_defaults = saved_own, saved_defaults
            (self.refilled, self.fresh_yields, self.parameters, self.plain_self, self.reused,
             self.instance) = saved_refilled
            self.last_uses = saved_last

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        saved, self.scope = self.scope, "class"
        # A class of no base but object: its instances are never arrays nor containers (its methods'
        # ``return self`` asks nothing; a metaclass keyword may make anything: then as any class).
        saved_plain, self.plain_class = self.plain_class, not node.keywords and all(
            isinstance(b, ast.Name) and b.id == "object" and "object" not in self.module_names for b in node.bases)
        try:
            self.generic_visit(node)
        finally:
            self.scope, self.plain_class = saved, saved_plain
        if any(isinstance(s, ast.FunctionDef) and s.name in STATE_NAMES | LOAD_NAMES for s in node.body):
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef):
                    _record_in_body(stmt)
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        if isinstance(node.target, ast.Name) and self.scope != "class":
            text = f"{_text(node.iter)}, yielded"
            site = self._site(node.target.id, "loop", text)
            func = node.iter.func if isinstance(node.iter, ast.Call) else None
            builtin = isinstance(func, ast.Name) and func.id in _ITERATORS
            counter = isinstance(func, ast.Name) and func.id == "range"
            self.given[node.target.id] = (text, MADE if counter else site)
            if not builtin:  # a builtin's iterator is never the project's generator: no look
                # The iterable passes through the runtime as it is (a look at its type, nothing else).
                # Over the function's own parameter, its items are the caller's as the parameter is:
                # a project caller's are the project's (rule Kept: the caller decides).
                passed = isinstance(node.iter, ast.Name) and self.given.get(node.iter.id, ("", -1))[1] == PARAMETER
                call = ast.Call(_rt("loop"), [node.iter, ast.Constant(site), *([ast.Constant(True)] * passed)], [])
                _place(call, node.iter)
                node.iter = call
        return self.generic_visit(node)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> ast.AST:
        # A lock's block (``with self._lock:``, ``with cond:``): an emptying write in it is synchronised
        # with whoever takes the same lock. An executor's or a file's block is not.
        locked = any(_LOCKISH.search(_text(item.context_expr).rpartition(".")[2]) for item in node.items)
        self.guarded += locked
        try:
            return self.generic_visit(node)
        finally:
            self.guarded -= locked

    visit_AsyncWith = visit_With

    def _emptying(self) -> list[ast.expr]:
        """wrote()'s *how* for a write that empties its target (``clear()``, ``del x[:]``), outside a ``with``."""
        return [] if self.guarded else [ast.Constant(2)]

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        """``lambda m, i, out: acts.append(out)`` (a hook): the keep is marked inside the expression.

        The body becomes ``through(acts.append(out), acts, out, site)``: the original call runs first,
        exactly as written; its result is what the lambda returns. Names only: read again, they run
        nothing of the program's.
        """
        saved, saved_atoms = dict(self.given), self.atoms
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            self.given[arg.arg] = ("", PARAMETER)
        self.atoms = self.atoms - {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                                                    args.kwarg) if a}
        try:
            self.generic_visit(node)
            body = node.body
            if (isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute) and body.func.attr in KEEPS
                    and isinstance(body.func.value, ast.Name) and len(body.args) > KEEPS[body.func.attr]
                    and isinstance(body.args[KEEPS[body.func.attr]], ast.Name) and not body.keywords):
                receiver, value = body.func.value, body.args[KEEPS[body.func.attr]]
                site = self._site(_text(receiver), body.func.attr, (_text(value), self._giver(value)))
                call = ast.Call(_rt("through"), [body, _name(receiver.id), _name(value.id),  # type: ignore[attr-defined]
                                                 ast.Constant(site), _name(receiver.id),  # type: ignore[attr-defined]
                                                 ast.Constant(self._source(value))], [])
                _place(call, body)
                node.body = call
        finally:
            self.given, self.atoms = saved, saved_atoms
        return node

    def _private(self, node: ast.expr) -> bool:
        """A local holding a container the function made and has not let out: nothing recorded it."""
        return isinstance(node, ast.Name) and node.id in self.private

    def _atom(self, node: ast.expr) -> bool:
        """The value is an atom whenever the statement runs, told from the source (:func:`atom_names`)."""
        return _atom_expr(node, self.atoms, self.shadowed or self.module_names)

    def _giver(self, value: ast.expr) -> str:
        if isinstance(value, ast.Name) and value.id in self.given and self.given[value.id][0]:
            return self.given[value.id][0]
        return _text(value)

    def _source(self, value: ast.expr) -> int:
        """Where a kept value came from: a loop's site, -2 for a parameter, MADE for a list, dict, set
        or tuple the project built itself (a display, a comprehension), -1 unknown."""
        if self._made(value):
            return MADE
        if isinstance(value, ast.Name) and value.id in self.given:
            return self.given[value.id][1]
        root = value
        while isinstance(root, ast.Subscript):
            root = root.value
        if root is not value and isinstance(root, ast.Name) and self.given.get(root.id, ("", -1))[1] == PARAMETER:
            return PARAMETER  # an item of the function's parameter: its caller's, as the parameter is
        copied = _copied_name(value)
        if copied is not None and self.given.get(copied, ("", -1))[1] == PARAMETER:
            return PARAMETER  # a shallow copy of the parameter: what it shares is the caller's, as the parameter is
        return -1

    def _made(self, node: ast.expr, depth: int = 4) -> bool:
        """Built by the project from its own parts: a list, dict, set or tuple display whose items are
        constants, names the project built, their items (``root[PREV]``), loop counters, an attribute
        of a name it built (``self.root`` in a method of its class), an item taken out of one
        (``links.pop(key)``)."""
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return self.given.get(node.id, ("", -1))[1] == MADE
        if isinstance(node, ast.Subscript):  # an item of the project's own container
            return bool(depth) and self._made(node.value, depth - 1)
        if isinstance(node, ast.Attribute):  # an attribute of a name the project built (self in a method)
            return isinstance(node.value, ast.Name) and self.given.get(node.value.id, ("", -1))[1] == MADE
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _TAKES
                and self._made(node.func.value, depth)):
            return True  # an item taken out of the project's own container (``links.pop(key)``)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # ``[0.0] * n``: the display's items
            return any(isinstance(side, _DISPLAYS) and self._made(side, depth - 1) for side in (node.left, node.right))
        if not depth or not isinstance(node, _DISPLAYS):
            return False
        items = node.values if isinstance(node, ast.Dict) else node.elts
        return all(item is not None and self._made(item, depth - 1) for item in items)

    # Every statement list (module, function and class bodies, loops, branches, with, try) is walked.
    def generic_visit(self, node: ast.AST) -> ast.AST:
        entry = self.private  # each statement list starts from it: a branch's container is not its sibling's
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self.private = entry
                out: list[ast.stmt] = []
                last = self.last_uses[1] if value is self.last_uses[0] else {}
                for index, stmt in enumerate(value):
                    if self.private:
                        self.private = self.private - _let_out(stmt, self.private, self.shadowed)
                    made = (self.scope == "function" and self.closed is not None and isinstance(stmt, ast.Assign)
                            and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                            and stmt.targets[0].id not in self.closed
                            and _fresh_expr(stmt.value, self.atoms, self.shadowed, self.containers))
                    before = self.private
                    new = self.visit(stmt)
                    self.private = before  # a container made in a nested block may not be the one here
                    if self.scope == "class" or not isinstance(new, ast.stmt):
                        out.append(new)  # type: ignore[arg-type]
                    elif isinstance(new, ast.ClassDef):
                        # Its state protocol is looked at once it exists (aliascheck.discovery), as
                        # a __build_class__ hook would, with no frame between the class body and its caller.
                        out += [new, _guarded(new, _call_stmt("made_class", _name(new.name)))]
                    else:
                        out.extend(self._statement(new))
                    if made:
                        self.private = self.private | {stmt.targets[0].id}  # type: ignore[attr-defined]
                    for name in last.get(index, ()):
                        out.append(_guarded(stmt, _call_stmt("last_used", _name(name), ast.Constant(name))))
                setattr(node, field, out)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST) and not _inert(item):
                        self.visit(item)
            elif isinstance(value, ast.AST) and not _inert(value):
                self.visit(value)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return node  # nothing inside (NodeVisitor's own looks for the pre-3.8 visit_Num and such)

    # -- statements ------------------------------------------------------------------------

    def _statement(self, stmt: ast.stmt) -> list[ast.stmt]:
        if _names_temporaries(stmt):
            # pytest's assertion temporaries (@py_assert1 = ...): its own, never a keeper; a ContextVar
            # read there is the test's read all the same
            if not (self.context_vars or self.imported):
                return [stmt]
            st = _Statement(self)
            self._context_gets(st, stmt)
            return st.emit(stmt)
        st = _Statement(self)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self._method(st, stmt.value)
        elif isinstance(stmt, ast.Assign):
            self._assign(st, stmt)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and stmt.simple is not None:
            self._assign(st, stmt)
        elif isinstance(stmt, ast.AugAssign):
            self._augmented(st, stmt)
        elif isinstance(stmt, ast.Delete):
            self._deleted(st, stmt)
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name) \
                and stmt.value.id in self.mutable_defaults:
            # ``return acc`` of ``acc=[]``: the one default, handed to each caller in turn
            site = self._site(stmt.value.id, "return", self.function)
            stmt.value = ast.copy_location(
                ast.Call(_rt("default_returned"), [stmt.value, ast.Constant(site)], []), stmt.value)
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.Dict, ast.List, ast.Tuple)) and any(
                isinstance(e, ast.Name) and e.id in self.mutable_defaults for e in _display_items(stmt.value)):
            # ``return {"name": name, "tags": tags}`` of ``tags=[]``: a new value per call, sharing the one default
            self._default_in_display(stmt.value)
        elif isinstance(stmt, ast.Return) and self.returning and stmt.value is not None:
            self._return(st, stmt)
        passes = self._passes(stmt, st)  # last: the others look at the calls as written
        judged: ast.stmt | None = None
        unpend: ast.stmt | None = None
        if passes is not None:
            # The temporaries the call's judgement does not read go first: one holding an intermediate
            # (the receiver of ``torch.as_tensor(buf).clone()``) would count as the library keeping buf.
            used = {n.id for n in ast.walk(passes.after) if isinstance(n, ast.Name)}
            st.after += _deleted([t for t in st.temps if t not in used])
            judged = _guarded(None, passes.after, test=_template("PENDED(S)", S=ast.Constant(passes.site)))
            st.after.append(judged)
            unpend = _call_stmt("UNPEND", ast.Constant(passes.site), ast.Constant(None))
            st.final.append(unpend)
        if self.context_vars or self.imported:
            self._context_gets(st, stmt)  # after _passes: its runtime calls are not the program's
        out = st.emit(stmt)
        yielded = self._yield(stmt)
        self._yield_view(stmt)
        if passes is not None:
            out = [self._branches(stmt, st, passes, (judged, unpend), out)]
        if yielded is not None:
            out.insert(0, yielded)
        return out

    def _branches(self, stmt: ast.stmt, st: _Statement, passes: _Passes, judging: tuple[Any, Any],
                  marked: list[ast.stmt]) -> ast.stmt:
        """``if PASSES(...): before(...); <the statement, its callees caught>; after(...)`` ``else: <the
        statement as otherwise marked>``: the gate's answer needs no temporary (the branch taken is the
        answer), and the statement runs with no temporary of the call's judgement bound in its frame
        unless the runtime asked for one. Each branch is the statement once, as written."""
        twin = _Uncaught(set(passes.caught)).visit(copy.deepcopy(stmt))
        other = _Statement(self)
        other.temps = [t for t in st.temps if t not in passes.caught]
        judged, unpend = judging  # the call's judgement after the statement, and its end: this branch's only
        other.after = [copy.deepcopy(node) for node in st.after if node is not judged]
        other.final = [node for node in st.final if node is not unpend]
        before = ast.Try(body=[passes.before], handlers=[ast.ExceptHandler(_rt("Exception"), None, [ast.Pass()])],
                         orelse=[], finalbody=[])
        branch = ast.If(passes.looked, [before, *marked], other.emit(twin))
        _place(branch, stmt)
        return branch

    def _context_gets(self, st: _Statement, stmt: ast.stmt) -> None:
        """``var.get()`` of a ContextVar the module binds (``info = var.get()``, ``return
        var.get()["user"]``, ``if cls._map.get()[...]``): the value and the ContextVar are told to the
        runtime as the statement reads them, ``context_got((@v := cls._map).get(), site, @v)``: each
        evaluated once, in its place, and the value used unchanged (rule *Runtime shallow copies*: a
        value a task's context copy shares, or the ContextVar's default, which every context shares)."""
        holders: list[tuple[Any, str]] = []  # (node, field) whose expression is looked into
        if isinstance(stmt, (ast.Expr, ast.Return, ast.Assign, ast.AnnAssign, ast.AugAssign)):
            holders.append((stmt, "value"))
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
            # ``var.get()["k"] = v``: the object written into, read as the statement reads it
            holders += [(t, "value") for t in targets if isinstance(t, (ast.Subscript, ast.Attribute))]
        elif isinstance(stmt, ast.If):
            holders.append((stmt, "test"))
        elif isinstance(stmt, ast.Assert):
            holders += [(stmt, "test"), (stmt, "msg")]
        marker = self

        class Gets(ast.NodeTransformer):
            def generic_visit(self, node: ast.AST) -> ast.AST:
                if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) \
                        or _inert(node):
                    return node  # a walrus may not bind there; a display of constants holds no call
                node = super().generic_visit(node)
                if not (isinstance(node, ast.Call) and marker._context_get(node)):
                    return node
                func = node.func
                assert isinstance(func, ast.Attribute)
                owner = func.value
                var: ast.expr
                if isinstance(owner, ast.Name):
                    var = _name(owner.id)  # a name, read again, runs nothing
                elif isinstance(owner, ast.NamedExpr):  # caught already by the statement's own marking
                    var = _name(owner.target.id)  # type: ignore[union-attr]
                else:
                    func.value, var = st.catch(owner)
                site = marker._site(_text(node), "context", marker.function)
                told = ast.Call(_rt("context_got"), [node, ast.Constant(site), var], [])
                ast.copy_location(told, node)
                return ast.fix_missing_locations(told)

        for holder, field in holders:
            root = getattr(holder, field)
            if root is not None:
                setattr(holder, field, Gets().visit(root))

    def _context_get(self, node: ast.expr) -> bool:
        """``var.get(...)``, ``cls._map.get(...)`` of a name or attribute the module binds to a ContextVar
        (a name the function binds itself is its own)."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
            return False
        owner = node.func.value
        if isinstance(owner, ast.NamedExpr) and isinstance(owner.target, ast.Name) and owner.target.id.startswith("@"):
            owner = owner.value
        if isinstance(owner, ast.Name):
            if owner.id in self.own:
                return False
            if owner.id in self.context_vars:
                return True
        elif isinstance(owner, ast.Attribute) and owner.attr in self.context_vars:
            return True
        # Another module's: ``request.get()`` or ``ctx.request.get()`` of an imported name, as a
        # ContextVar is read (no argument, or a default of None; never a mapping's ``get(key)``).
        base = owner.value if isinstance(owner, ast.Attribute) else owner
        plain = not node.keywords and (not node.args or (
            len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and node.args[0].value is None))
        return isinstance(base, ast.Name) and base.id in self.imported and base.id not in self.own and plain

    def _yield(self, stmt: ast.stmt) -> ast.stmt | None:
        """``yield name`` of an array or tensor in the project's generator: told to the runtime just
        before it is handed out (a name, read again, runs nothing), so that a refill of the same
        buffer before its next yield is seen while a consumer still holds the last one."""
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
        if not (self.scope == "function" and isinstance(value, ast.Yield) and isinstance(value.value, ast.Name)
                and not value.value.id.startswith("@")):
            return None  # ``yield name`` or ``got = yield name`` (send's answer bound after it)
        name = value.value.id
        site = self._site(name, "yield", self.function)
        # A name the generator writes into and its loop does not bind anew: one object it refills.
        reused = name in self.refilled and id(value) not in self.fresh_yields
        test = _template("REFILLED(X, True)" if reused else "BUFFER(X)", X=_name(name))
        return _guarded(stmt, _call_stmt("yielded", _name(name), ast.Constant(site)), test=test)

    def _default_in_display(self, display: ast.Dict | ast.List | ast.Tuple) -> None:
        """Each mutable default named in a returned display is told to the runtime as it is put in."""
        items = display.values if isinstance(display, ast.Dict) else display.elts

        def told(item: ast.expr) -> ast.expr:
            if isinstance(item, ast.Name) and item.id in self.mutable_defaults:
                site = self._site(item.id, "return", self.function)
                return ast.copy_location(ast.Call(_rt("default_returned"), [item, ast.Constant(site),
                                                                             ast.Constant(True)], []), item)
            return item

        items[:] = [told(item) for item in items]

    def _return(self, st: _Statement, stmt: ast.Return) -> None:
        """``return name``, ``return self.obs`` and such items of a returned tuple (``return self.obs,
        reward, done``) in a plain function: each is handed to the runtime on its way out when it is
        an array or tensor something else refers to too, ``(returned(@t, site) if RETURNING(@t :=
        self.obs) else @t)``: evaluated once, in its place, and returned unchanged (a name is read
        again, it runs nothing). A new array (``y = x * 2; return y``) is never asked about. The
        rule of the generator's yield, for a function that returns one buffer it refills."""
        value = stmt.value
        if value is None:
            return
        parts = value.elts if isinstance(value, ast.Tuple) else [value]
        for i, part in enumerate(parts):
            wrapped = self._returned(st, part)
            if wrapped is None:
                continue
            if isinstance(value, ast.Tuple):
                value.elts[i] = wrapped
            else:
                stmt.value = wrapped

    def _returned(self, st: _Statement, part: ast.expr) -> ast.expr | None:
        """One returned item, told to the runtime on its way out (:meth:`_return`), or None: nothing
        to tell. Each branch of ``a if c else b`` is told as that item would be (``return self.buf.clone()
        if self.copy else self.buf``): only the branch taken is evaluated, once."""
        if isinstance(part, ast.IfExp):
            body, orelse = self._returned(st, part.body), self._returned(st, part.orelse)
            if body is None and orelse is None:
                return None
            part.body, part.orelse = body or part.body, orelse or part.orelse
            return part
        caught: ast.expr
        if isinstance(part, ast.Name) and part.id == self.plain_self:
            return None  # the instance of a class of no base but object: never an array nor a container
        text = _receiver_text(part) if isinstance(part, (ast.Name, ast.Attribute)) else None
        # What the function writes into and keeps past the call (an attribute, a global, a closure's,
        # a local bound to one): not a parameter, which the caller owns and passes again or not.
        gate = "REFILLED(X)" if text in self.refilled and text not in self.parameters else "RETURNING(X)"
        if isinstance(part, ast.Name) and not (part.id.startswith("@") or part.id in self.atoms
                                               or self._private(part)) and (
                part.id in self.own or gate == "RETURNING(X)"):
            caught, again = _name(part.id), _name(part.id)
        elif isinstance(part, ast.Name) and gate == "REFILLED(X)" and not part.id.startswith("@"):
            # a global or a closure's: caught in a temporary, so that its count is an attribute's
            temp = self.temp()
            st.temps.append(temp)
            caught, again = ast.NamedExpr(ast.Name(temp, ast.Store()), part), _name(temp)
        elif isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name):
            temp = self.temp()
            st.temps.append(temp)
            caught, again = ast.NamedExpr(ast.Name(temp, ast.Store()), part), _name(temp)
        else:
            return None
        site = self._site(_text(part), "return", self.function)
        # A method's instance (a name: reading it runs nothing): one function returning several objects
        # for one instance (an identity map's lookups) hands out no one buffer it refills.
        instance = [_name(self.instance)] if self.instance else []
        told = ast.Call(_rt("returned"), [again, ast.Constant(site), *instance], [])
        wrapped = ast.IfExp(_template(gate, X=caught), told, copy.copy(again))
        ast.copy_location(wrapped, part)
        ast.fix_missing_locations(wrapped)
        return wrapped

    def _yield_view(self, stmt: ast.stmt) -> None:
        """``yield name[...]`` (a view of an array or tensor) in the project's generator: the view is
        handed to the runtime on its way out, ``yield (VIEW(name[...], name) if BUFFER(name)
        else name[...])``: evaluated once, either way, and returned unchanged. Each view is a new
        object over the one buffer: memory is the identity, so the runtime compares the bytes of the
        view yielded before, still kept, when the next one is yielded."""
        value = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (self.scope == "function" and isinstance(value, ast.Yield) and isinstance(value.value, ast.Subscript)
                and isinstance(value.value.value, ast.Name) and not value.value.value.id.startswith("@")):
            return
        name = value.value.value.id
        site = self._site(name, "yield", self.function)
        view = value.value
        passed = ast.Call(_rt("yielded_view"), [copy.deepcopy(view), _name(name), ast.Constant(site)], [])
        value.value = ast.copy_location(
            ast.IfExp(_template("BUFFER(X)", X=_name(name)), passed, view), view)
        ast.fix_missing_locations(value)

    def _method(self, st: _Statement, call: ast.Call) -> None:
        holder: Any = call
        func = call.func
        # x.mul_(a).add_(b): the in-place chain writes its innermost receiver.
        while (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
               and isinstance(func.value.func, ast.Attribute) and _in_place(func.attr)
               and _in_place(func.value.func.attr)):
            holder, func = func.value, func.value.func
        if not isinstance(func, ast.Attribute) or any(isinstance(a, ast.Starred) for a in holder.args):
            return
        name, receiver = func.attr, func.value
        root = _root(receiver)
        if name in KEEPS and len(holder.args) > KEEPS[name] and holder is call:
            index = KEEPS[name]
            value = holder.args[index]
            site = self._site(_text(receiver), name, (_text(value), self._giver(value)))
            source = REUSED if id(value) in self.reused else self._source(value)
            atom = self._atom(value)
            private = self._private(receiver)
            func.value, keeper = st.catch(receiver)
            holder.args[index], kept, owner = self._value(st, value)
            self._kept(st, keeper, kept, site, None, root, source, owner, atom, private)
        elif _in_place(name) and not self._private(receiver):
            how = self._emptying() if name == "clear" and not holder.args and not holder.keywords else []
            if isinstance(receiver, ast.Name):  # read again after the call: a name runs nothing
                target = _name(receiver.id)
                st.call("wrote", target, root, *how, only=_written(target))
                return
            # The bound method is caught, not its receiver: a temporary holding the receiver would add
            # a reference during the call (NumPy's resize refuses an array referred to twice); the
            # method's reference is the one the call holds anyway. Its receiver is read from it at C
            # level (SELF: a method's or a builtin method's __self__, else None) after the call.
            holder.func, method = st.catch(func)
            temp = self.temp()
            st.temps.append(temp)
            caught = ast.NamedExpr(ast.Name(temp, ast.Store()), _template("SELF(M)", M=method))
            st.call("wrote", _name(temp), root, *how,
                    only=_template("BUFFER_OR_WATCHED(R, T)", R=caught, T=_name(temp)))

    def _assign(self, st: _Statement, stmt: ast.Assign | ast.AnnAssign) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = stmt.value
        assert value is not None
        keeps = [t for t in targets if isinstance(t, ast.Attribute)
                 or (isinstance(t, ast.Subscript) and not isinstance(t.slice, ast.Slice))]
        text, giver, source = _text(value), self._giver(value), self._source(value)
        if id(value) in self.reused:
            source = REUSED
        atom = self._atom(value)
        kept: ast.expr | None = None
        owner: ast.expr = ast.Constant(None)
        # An atom kept only into the function's own unshared containers: nothing to record or judge.
        quiet = atom and all(self._private(t.value) for t in keeps)
        if keeps and not quiet:
            stmt.value, kept, owner = self._value(st, value)  # evaluated first, as Python does
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)):
                root = _root(target.value)
                private = self._private(target.value)
                if private and (quiet or isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice)):
                    continue
                target.value, keeper = st.catch(target.value)
                if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice):
                    st.call("wrote", keeper, root, only=_written(keeper))
                    continue
                site = self._site(_text(target), "item" if isinstance(target, ast.Subscript) else "attr",
                                  (text, giver))
                assert kept is not None
                self._kept(st, keeper, kept, site, target.attr if isinstance(target, ast.Attribute) else None,
                           root, source, owner, atom, private)
                if isinstance(value, ast.Name) and value.id in self.mutable_defaults:
                    # ``self.inputs = inputs`` of ``inputs=[]``: the one default, kept by each new keeper
                    st.call("default_kept", keeper, kept, ast.Constant(site))
        if len(targets) == 1 and _repetition(value):
            # ``rows = [[0] * n] * n``, ``groups = dict.fromkeys(keys, [])``: one object at every position
            site = self._site(_text(targets[0]), "repeat", (text, _one_each(value)))
            if isinstance(targets[0], ast.Name):
                st.call("repeated", _name(targets[0].id), ast.Constant(site))
            elif isinstance(targets[0], ast.Attribute) and kept is not None:
                st.call("repeated", copy.copy(kept), ast.Constant(site))
        if len(targets) != 1 or keeps:
            return
        target = targets[0]
        bound = stmt.value
        if isinstance(target, ast.Name) and bound is not None and _bound_value(bound) and not self._made(bound) \
                and not ((self.context_vars or self.imported) and self._context_get(bound)):  # _context_gets's
            self.given[target.id] = (text, -1)
            self._bound(st, target, bound)
        elif isinstance(target, ast.Name):
            self.given[target.id] = (text, MADE if stmt.value is not None and self._made(stmt.value) else -1)
        elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) and len(target.elts) == len(
                stmt.value.elts):
            made = [self._made(v) for v in stmt.value.elts]  # before any name is rebound
            for t, v, own in zip(target.elts, stmt.value.elts, made, strict=True):
                if isinstance(t, ast.Name):
                    self.given[t.id] = (_text(v), MADE if own else -1)
                    if _bound_value(v) and not own:
                        self._bound(st, t, v)
        if isinstance(target, (ast.Tuple, ast.List)):
            self._unpacked(st, target)

    def _unpacked(self, st: _Statement, target: ast.Tuple | ast.List) -> None:
        """``a[i], b.x = ...`` (and starred, nested): each item or attribute target is the project's write."""
        for elt in target.elts:
            if isinstance(elt, ast.Starred):
                elt = elt.value
            if isinstance(elt, (ast.Tuple, ast.List)):
                self._unpacked(st, elt)
            elif isinstance(elt, (ast.Attribute, ast.Subscript)) and not self._private(elt.value):
                root = _root(elt.value)
                elt.value, receiver = st.catch(elt.value)
                st.call("wrote", receiver, root, only=_written(receiver))

    def _deleted(self, st: _Statement, stmt: ast.Delete) -> None:
        """``del r[k]``, ``del r[:]``, ``del r.a``: the project's write into ``r`` (``del r[:]`` empties it)."""
        for target in stmt.targets:
            if not isinstance(target, (ast.Subscript, ast.Attribute)) or self._private(target.value):
                continue
            root = _root(target.value)
            whole = (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice)
                     and target.slice.lower is None and target.slice.upper is None and target.slice.step is None)
            target.value, receiver = st.catch(target.value)
            st.call("wrote", receiver, root, *(self._emptying() if whole else []), only=_written(receiver))

    def _augmented(self, st: _Statement, stmt: ast.AugAssign) -> None:
        target = stmt.target
        if isinstance(target, (ast.Subscript, ast.Attribute)) and self._private(target.value):
            return  # a write into a container the function made and has not let out: nothing recorded it
        if isinstance(target, (ast.Subscript, ast.Attribute)):
            root = _root(target.value)
            target.value, receiver = st.catch(target.value)
            augmented = [ast.Constant(True)] if isinstance(target, ast.Subscript) else []
            st.call("wrote", receiver, root, *augmented, only=_watched(receiver))
        elif isinstance(target, ast.Name):  # ``sample -= mean``: an array's or tensor's memory, maybe a view's
            st.call("wrote", _name(target.id), _name(target.id),
                    only=_written(_name(target.id)))

    @staticmethod
    def _value(st: _Statement, value: ast.expr) -> tuple[ast.expr, ast.expr, ast.expr]:
        """(the kept value as the statement now evaluates it, its value afterwards, the object it was
        read from: ``made`` of ``made.payload``, None for anything but an attribute)."""
        owner: ast.expr = ast.Constant(None)
        if isinstance(value, ast.Attribute):
            value.value, owner = st.catch(value.value)
        new, kept = st.catch(value)
        return new, kept, owner

    def _kept(self, st: _Statement, keeper: ast.expr, value: ast.expr, site: int, attr: str | None,
              root: ast.expr, source: int, owner: ast.expr, atom: bool = False, private: bool = False) -> None:
        """``runtime.kept(keeper, value, ...)``, called only when it could record or judge something.

        Not called for an atom kept into something nothing records, nor for a dict or list of atoms
        the keeper alone holds (:func:`aliascheck.gate.keep`). An item of the project's own generator (*source*,
        a loop site in ``FED``) kept into something nothing records is compared with the site's
        last one by the gate: a different object becomes the last (kept's own bookkeeping, for the
        types a ``_Last`` holds itself); the same one, a history of one object, calls kept.
        """
        # A keeper the function made and has not let out is in no record: no write into it is looked at.
        # Neither an atom, a tuple of atoms nor a quiet dict or list (aliascheck.gate), or a write into
        # something recorded: one call, compiled where the install could.
        only: ast.expr = ast.Call(_rt("GATE"), [copy.copy(value), copy.copy(keeper),
                                                *([ast.Constant(False)] if private else [])], [])
        if source == MADE:  # the project's own value: an array's memory, or a write into something recorded
            only = _buffer(value) if private else _template("BUFFER_OR_WATCHED(V, K)", V=copy.copy(value),
                                                                      K=copy.copy(keeper))
        if atom:  # an atom by the source: only a write into something recorded
            if private:
                return
            only = _watched(keeper)
        if source == REUSED:  # a dict, list, set, bytearray or buffer the loop refills, whatever its count
            only = ast.BoolOp(ast.Or(), [_template("REFILLED(V, True)", V=copy.copy(value)), only])
        if (source >= 0 or source == PARAMETER) and not atom:
            # an item of a loop, or a parameter: the gate's fed-loop path (aliascheck.gate), which for a
            # parameter needs the function's caller to be the project's
            only = ast.Call(_rt("GATE"), [copy.copy(value), copy.copy(keeper), ast.Constant(not private),
                                          ast.Constant(source), ast.Constant(site)], [])
        st.call("kept", keeper, value, ast.Constant(site), ast.Constant(True), ast.Constant(attr), root,
                ast.Constant(source), owner, only=only)

    def _bound(self, st: _Statement, target: ast.Name, call: ast.expr) -> None:
        """``name = call(...)`` or ``name = [p for p in call(...)]``: the name is read again after the
        statement (a name runs no code)."""
        if target.id.startswith("@") or self._atom(call):
            return
        if isinstance(call, ast.Await):
            call = call.value  # the awaited call: its result is what the name is bound to
        if isinstance(call, ast.IfExp):  # the branch that ran made the value: read from the name, as ever
            site = self._site(target.id, "name", _text(call))
            st.call("bound", _name(target.id), ast.Constant(site), ast.Constant(_text(call)),
                    only=_template("BIND(X)", X=_name(target.id)))
            return
        if not isinstance(call, ast.Call):  # a comprehension: the list a call(...) builds, the same
            site = self._site(target.id, "name", _text(call))
            iterable = call.generators[0].iter  # type: ignore[attr-defined]
            st.call("bound", _name(target.id), ast.Constant(site), ast.Constant(_text(iterable)),
                    only=_template("BIND(X)", X=_name(target.id)))
            return
        func = call.func
        source = _copied_from(call)
        if source is not None:
            site = self._site(target.id, "copy", _text(call))
            if isinstance(func, ast.Attribute) and func.attr in COPIES and not call.args:
                func.value, origin = st.catch(func.value)
            else:
                call.args[0], origin = st.catch(call.args[0])
            st.call("copied", _name(target.id), origin, ast.Constant(site))
            return
        if isinstance(func, ast.Attribute) and func.attr in _TAKES and self._private(func.value):
            return  # an item back out of the function's own unshared container: looked at as it went in
        site = self._site(target.id, "name", _text(call))
        # Only a value whose type bound may judge (the types it never does are learnt as met).
        only: ast.expr = _template("BIND(X)", X=_name(target.id))
        if isinstance(func, ast.Attribute):
            # ``words = line.split()``: a method of a str, a number or bytes hands out nothing live. A
            # receiver ``name.a.b`` is told as the name and its attributes' names, which the gate reads
            # again running nothing of the program's (a property on the way: not told, the runtime looks),
            # rather than caught in a temporary the call could see in its caller's locals.
            chain = _callee(func.value, set())
            if isinstance(chain, ast.Tuple):
                only = ast.Call(_rt("BIND"), [_name(target.id), *chain.elts], [])
            else:
                func.value, receiver = st.catch(func.value)
                only = _template("BIND(X, O)", X=_name(target.id), O=receiver)
        st.call("bound", _name(target.id), ast.Constant(site), ast.Constant(_text(func)), only=only)

    def _passes(self, stmt: ast.stmt, st: _Statement) -> _Passes | None:
        """Around a statement whose calls take names: what each call's callee kept of them.

        Only plain names are looked at before the statement (reading one runs nothing of the
        program's); each callee is caught as the statement evaluates it, and the runtime compares
        the names' reference counts before and after.
        """
        if isinstance(stmt, ast.Expr):
            value: ast.expr | None = stmt.value
            result: ast.expr | None = None
            targets: list[ast.expr] = []
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            value = stmt.value
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            result = None
        else:
            return None
        if value is None:
            return None
        found = _calls(value)
        if not found:
            return None
        # Names the statement binds itself (a walrus) are not read before it: they may be unbound.
        bound_here = {n.target.id for n in ast.walk(value) if isinstance(n, ast.NamedExpr)
                      and isinstance(n.target, ast.Name)}
        calls = []
        for call in found:
            func = call.func
            if isinstance(func, ast.NamedExpr) and func.target.id.startswith("@"):  # type: ignore[union-attr]
                func = func.value  # a method caught by the statement's own marking (_method): as written
            if (isinstance(func, ast.Attribute) and (func.attr in KEEPS or func.attr in WRITES
                                                     or self._made(func.value))) or (
                    isinstance(func, ast.Name) and func.id in PURE):
                continue  # a container's own method (kept/wrote say it; the project's own), a pure builtin
            names = [a for a in (*call.args, *(k.value for k in call.keywords if k.arg is not None))
                     if isinstance(a, ast.Name) and a.id not in bound_here and a.id not in self.atoms]
            if names:
                calls.append((call, [n.id for n in names]))
        if not calls:
            return None
        extra = [(_text(c.func), names) for c, names in calls]
        number = self._site(" / ".join(_text(c.func) for c, _ in calls), "pass", extra)
        site = ast.Constant(number)
        # A callee that is a plain name is read before too (a name runs no code), and one that is a
        # name's attribute is given as (the name, the attribute's name): the runtime reads a module's
        # function from its dict (no __getattr__). When none is a library's, nothing is handed out.
        callees = ast.Tuple([_callee(c.func, bound_here) for c, _ in calls], ast.Load())
        # Each callee for after(): a plain name, read again (it runs nothing); ``name.attr``, found by
        # before() as the statement is about to evaluate it (None here); anything else caught in a
        # temporary as the statement evaluates it. A temporary is bound while the call runs, where a
        # callee that reads its caller's locals (a traceback's ``show_locals``) would see it.
        funcs: list[ast.expr] = []
        temps = len(st.temps)
        for call, _names in calls:
            told = _callee(call.func, bound_here)
            if isinstance(told, ast.Tuple):
                funcs.append(ast.Constant(None))
            elif (isinstance(call.func, ast.NamedExpr) and isinstance(call.func.target, ast.Name)
                    and call.func.target.id.startswith("@")):
                funcs.append(_name(call.func.target.id))  # already caught by the statement's own marking
            else:
                call.func, func = st.catch(call.func)
                funcs.append(func)
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            result = _name(targets[0].id)
        elif isinstance(value, ast.NamedExpr) and value.target.id.startswith("@"):  # type: ignore[union-attr]
            result = _name(value.target.id)  # type: ignore[union-attr]
        elif targets and isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            stmt.value, result = st.catch(stmt.value)  # type: ignore[arg-type]
        caught = st.temps[temps:]  # the callees' and the result's: after() alone reads them
        args = ast.Tuple([ast.Tuple([_name(n) for n in names], ast.Load()) for _, names in calls], ast.Load())
        # Only a name whose type the runtime may look at (types it never does are learnt as met).
        # And, for one call of a plain name (or of ``owner.name``: the owner, a class or a module), not
        # while that callee is the one that kept nothing here.
        one = callees.elts[0] if len(calls) == 1 else None
        quiet = _clone(one) if isinstance(one, ast.Name) else _clone(one.elts[0]) if (
            isinstance(one, ast.Tuple) and len(one.elts) == 2) else ast.Constant(None)
        looked = ast.Call(_rt("PASSES"), [_clone(site), quiet, *(_name(n) for _, names in calls for n in names)], [])
        pairs = ast.Tuple([ast.Tuple([f, ast.Tuple([_name(n) for n in names], ast.Load())], ast.Load())
                           for f, (_, names) in zip(funcs, calls, strict=True)], ast.Load())
        after = _call_stmt("after", site, pairs, result if result is not None else ast.Constant(None))
        return _Passes(_call_stmt("before", site, args, callees), after, looked, number, caught)


class _Passes(NamedTuple):
    """What :meth:`Marker._passes` makes of a statement whose calls take names."""
    before: ast.stmt  # runtime.before(site, names, callees), when the gate looked
    after: ast.stmt  # runtime.after(site, (callee, names) per call, result)
    looked: ast.expr  # the gate: PASSES(site, the one callee or None, *names)
    site: int
    caught: list[str]  # the temporaries that catch callees for after()


class _Uncaught(ast.NodeTransformer):
    """The statement without the callee catches of :meth:`Marker._passes`: ``(@t := f)`` is ``f`` again."""

    def __init__(self, temps: set[str]) -> None:
        self.temps = temps

    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.target, ast.Name) and node.target.id in self.temps:
            return node.value
        return node


def _display_items(display: ast.Dict | ast.List | ast.Tuple) -> list[ast.expr]:
    return list(display.values) if isinstance(display, ast.Dict) else list(display.elts)


def _copied_name(value: ast.expr) -> str | None:
    """The name a shallow copy is made of: ``name.copy()``, ``copy.copy(name)``, ``dict(name)``; else None."""
    if not isinstance(value, ast.Call) or value.keywords:
        return None
    func = value.func
    if (len(value.args) == 1 and isinstance(value.args[0], ast.Name) and isinstance(func, ast.Name)
            and func.id == "dict"):
        return value.args[0].id
    if not value.args and isinstance(func, ast.Attribute) and func.attr in COPIES and isinstance(func.value, ast.Name):
        return func.value.id
    if (len(value.args) == 1 and isinstance(value.args[0], ast.Name) and isinstance(func, ast.Attribute)
            and func.attr == "copy" and isinstance(func.value, ast.Name) and func.value.id == "copy"):
        return value.args[0].id
    return None


def _callee(func: ast.expr, bound_here: set[str]) -> ast.expr:
    """What :func:`aliascheck.boundary.runtime.before` is told of a call's callee before the statement
    runs: a plain name's value; for ``name.a.b`` (a chain of attributes of a name, as short as
    ``name.a``), (the name's value, "a", "b"); else None."""
    if isinstance(func, ast.Name) and func.id not in bound_here:
        return _name(func.id)
    attrs: list[str] = []
    while isinstance(func, ast.Attribute) and len(attrs) < CHAIN:
        attrs.append(func.attr)
        func = func.value
    if attrs and isinstance(func, ast.Name) and func.id not in bound_here:
        return ast.Tuple([_name(func.id), *(ast.Constant(a) for a in reversed(attrs))], ast.Load())
    return ast.Constant(None)


CHAIN = 4  # the longest ``name.a.b.c`` a callee is told as, before the statement runs


def _watched(node: ast.expr) -> ast.expr:
    """The object is recorded, or part of something recorded (a set's truth first: mostly empty)."""
    return _template("WATCHING(X)", X=node)


def _written(node: ast.expr) -> ast.expr:
    """After an in-place write into *node*'s value: an array's or tensor's memory, or something recorded."""
    return _template("BUFFER_OR_WATCHED(X, X)", X=node)


def _buffer(node: ast.expr) -> ast.expr:
    """An array or tensor (a view's write lands in its base's memory)."""
    return _template("BUFFER(X)", X=node)


def _names_temporaries(stmt: ast.stmt) -> bool:
    """A statement that binds an ``@``-named temporary (pytest's assertion rewriting)."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return any(isinstance(t, ast.Name) and t.id.startswith("@") for t in targets)


def _calls(node: ast.expr) -> list[ast.Call]:
    """The calls an expression always makes, outermost first: not those inside a lambda or a
    comprehension, nor those in a branch it may not take (``f(x) if key else x``, ``a or f(x)``),
    whose names may be unbound when the statement runs (boltons' ``iterutils.redundant``)."""
    out: list[ast.Call] = []
    todo = collections.deque([node])  # outermost first; a 100k-item data display is one statement
    while todo:
        current = todo.popleft()
        if isinstance(current, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(current, ast.Call):
            out.append(current)
        if isinstance(current, ast.IfExp):
            todo.append(current.test)
        elif isinstance(current, ast.BoolOp):
            todo.append(current.values[0])
        else:
            todo.extend(c for c in ast.iter_child_nodes(current) if isinstance(c, ast.expr) and not _inert(c))
    return out


# Calls that read a frame's names or its locals another way than the code does: a function making one
# has no name read for the last time that the source can tell.
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "breakpoint", "_getframe", "currentframe", "stack",
                            "getouterframes", "getinnerframes"})


def _last_uses(func: ast.FunctionDef | ast.AsyncFunctionDef, parameters: frozenset[str]) -> dict[int, list[str]]:
    """For a test function: statement index -> the names bound once, at its top level, by an assignment,
    that no statement after that one reads (nor a nested function, lambda or class at all). A name the
    last statement reads, one deleted, declared global or nonlocal, or bound anywhere else, and every
    name of a function that reads its frame another way (``locals()``, ``sys._getframe``), are left out."""
    body = func.body
    bound: dict[str, int] = {}
    excluded: set[str] = set(parameters)
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            callee = node.func
            called = (callee.attr if isinstance(callee, ast.Attribute)
                      else callee.id if isinstance(callee, ast.Name) else "")
            pytest_own = isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Name) \
                and callee.value.id.startswith("@")  # ``@py_builtins.locals()``: an assertion's message only
            if called in _FRAME_READERS and not pytest_own:
                return {}
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            excluded.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and node is not func:
            excluded.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    top_targets: dict[int, list[ast.expr]] = {}
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.Assign):
            top_targets[index] = [t for target in stmt.targets
                                  for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            top_targets[index] = [stmt.target]
    for index, targets in top_targets.items():
        for target in targets:
            if isinstance(target, ast.Name):
                excluded.update([target.id] if target.id in bound else [])
                bound.setdefault(target.id, index)
    reads: dict[str, int] = {}
    for index, stmt in enumerate(body):
        simple = {id(t) for t in top_targets.get(index, ())}
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Name):
                continue
            if isinstance(node.ctx, ast.Load):
                reads[node.id] = index
                if index < bound.get(node.id, -1):
                    excluded.add(node.id)  # read before its binding here: another binding's (a global)
            elif id(node) not in simple:
                excluded.add(node.id)  # bound or deleted another way (a loop's target, ``with ... as``, ``del``)
    out: dict[int, list[str]] = {}
    for name, at in bound.items():
        last = max(at, reads.get(name, at))
        if name in excluded or name.startswith("@") or last >= len(body) - 1:
            continue
        out.setdefault(last, []).append(name)
    return out


def _bound_value(node: ast.expr) -> bool:
    """A call, or a list or set comprehension whose items are the loop's own objects, unchanged on
    one branch at least (``[p for p in model.parameters()]``: what ``list(...)`` of it is). A comprehension that makes
    new values (``[p.detach().clone() for p in ...]``, ``[x * 2 for x in xs]``) binds nothing live."""
    if isinstance(node, ast.Call):
        return True
    if isinstance(node, ast.Await):  # ``rows = await asyncio.gather(...)``: what the awaited call gives
        return isinstance(node.value, ast.Call)
    if isinstance(node, ast.IfExp):  # ``a = t.numpy() if cpu else t.cpu().numpy()``: either branch's value
        return _bound_value(node.body) or _bound_value(node.orelse)
    if isinstance(node, ast.DictComp):  # ``{k: v.cpu() for k, v in sd.items()}``: judged by its values
        node = ast.ListComp(node.value, node.generators)
    if not isinstance(node, (ast.ListComp, ast.SetComp)) or len(node.generators) != 1:
        return False
    target = node.generators[0].target
    # ``for p in ...`` or ``for i, env in enumerate(...)``: each name the loop binds
    names = [target] if isinstance(target, ast.Name) else [
        t for t in target.elts if isinstance(t, ast.Name)] if isinstance(target, ast.Tuple) else []
    # ``[p.detach().clone() if copy else p for p in ...]``: the items themselves, on one branch; or what
    # may view their memory (``[f[:2] for f in frames]``, ``[torch.from_numpy(f) for f in frames]``)
    elts = [node.elt.body, node.elt.orelse] if isinstance(node.elt, ast.IfExp) else [node.elt]
    return any(_of_item(e, name.id) for e in elts for name in names)


# Calls and methods that make new memory of what they are given: their results share nothing with it.
_NEW_MEMORY = frozenset({"copy", "deepcopy", "clone", "tolist", "item", "tobytes", "array", "tensor", "list", "tuple",
                         "dict", "set", "bytes", "bytearray", "str", "repr", "int", "float", "bool", "len", "sum",
                         "sorted", "astype", "mean", "max", "min", "norm", "hash", "id", "type", "isinstance"})


def _of_item(node: ast.expr, name: str) -> bool:
    """The loop's item *name* itself, or an expression that may view its memory: a part of it (``f[:2]``,
    ``f.T``), a method's result (``f.reshape(-1)``, ``t.numpy()``), or a call given it first
    (``torch.from_numpy(f)``, ``np.asarray(f)``); not a call known to make new memory (``f.copy()``)."""
    while True:
        if isinstance(node, ast.Name):
            return node.id == name
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in _NEW_MEMORY:
                return False
            if isinstance(func, ast.Attribute) and _of_item(func.value, name):
                return True
            if not node.args or isinstance(node.args[0], ast.Starred):
                return False
            node = node.args[0]
        else:
            return False


def _atom_expr(node: ast.expr, atoms: frozenset[str] | set[str], shadowed: frozenset[str] | set[str]) -> bool:
    """An expression whose value is an atom, told from the source alone: a constant, an f-string,
    a builtin that makes one (``len(x)``, unless the module or function binds the name), ``not x``,
    a name in *atoms*, arithmetic of those (an atom's operator with an atom makes one, or raises).

    Arithmetic with a number literal (``seen[node] + 1``, ``x / 2.0``, but not ``*``, which repeats
    a sequence's items) counts too: it makes a new number or a new array (``arr + 1``), or raises
    (a list, a dict, a string); a new value is no one's live state, so nothing there is kept."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, _ATOM_CONSTANTS)
    if isinstance(node, ast.JoinedStr) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    if isinstance(node, ast.Name):
        return node.id in atoms
    if isinstance(node, ast.UnaryOp):
        return _atom_expr(node.operand, atoms, shadowed)
    if isinstance(node, ast.BinOp):
        if not isinstance(node.op, (ast.Mult, ast.MatMult)) and (_number(node.left) or _number(node.right)):
            return True
        return _atom_expr(node.left, atoms, shadowed) and _atom_expr(node.right, atoms, shadowed)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATOM_CALLS
            and node.func.id not in shadowed)


_BUILTIN_CONTAINERS = frozenset({"list", "dict", "set"})
_COLLECTIONS = frozenset({"deque", "defaultdict", "OrderedDict", "Counter"})


def _imported_containers(body: list[ast.stmt]) -> frozenset[str]:
    """The names a module binds only by ``from collections import deque`` (and the like), at its top."""
    imports = [stmt for stmt in body if isinstance(stmt, ast.ImportFrom) and stmt.module == "collections"
               and not stmt.level]
    names = {a.asname or a.name for stmt in imports for a in stmt.names if a.name in _COLLECTIONS}
    if not names:
        return frozenset()
    others = _binders(n for n in _scope_nodes(body) if not any(n is stmt for stmt in imports))
    return frozenset(names - others)


def _number(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, complex)


def _scope_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of a function's own scope: not those of a nested function, class or comprehension."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend([*node.decorator_list, *getattr(node, "bases", ()), *getattr(node, "keywords", ())])
            if not isinstance(node, ast.ClassDef):
                todo.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)])
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) or _inert(node):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


_INERT_DISPLAYS = (ast.Tuple, ast.List, ast.Set)


def _inert(node: ast.AST) -> bool:
    """A constant, or a tuple, list or set display of constants (a data module's 100k rows): nothing in
    it to mark, bind or call. Told without a walk."""
    kind = type(node)
    return kind is ast.Constant or (kind in _INERT_DISPLAYS
                                    and all(type(e) is ast.Constant for e in node.elts))  # type: ignore[attr-defined]


_BINDING = frozenset({ast.Name, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
                      ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping, ast.Global, ast.Nonlocal})


def bound_names(body: list[ast.stmt], names: bool = True) -> set[str]:
    """Every name a scope's own statements bind (a module's: what may shadow a builtin); not
    *names*: those bound by other statements than an assignment, ``for``, ``with`` or ``del``."""
    return _binders(_scope_nodes(body), names)


def _receiver_text(node: ast.expr) -> str | None:
    """``x`` or ``x.a`` (a name, or an attribute of one) that a write's target starts from through
    subscripts (``x[k][j] = v`` writes into ``x``): its text, else None."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _refilled(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """What a function writes into in place, as the text of a name or ``name.attr``: an item
    assigned, augmented or deleted (``row["id"] = i``, ``self.buf[k] += 1``), or an in-place method
    called on it (``row.clear()``, ``out.append(v)``). Its ``return x`` and ``yield x`` of these are
    told to the runtime when the value is a dict, list, set or buffer (rule *Who wrote it, for whom*)."""
    out: set[str] = set()
    for node in nodes:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and (_in_place(node.func.attr) or node.func.attr in KEEPS)):
            text = _receiver_text(node.func.value)
            if text is not None:
                out.add(text)
        for target in targets:
            if isinstance(target, ast.Subscript):
                text = _receiver_text(target)
                if text is not None:
                    out.add(text)
    return frozenset(out)


def _reused_keeps(nodes: Iterable[ast.AST]) -> set[int]:
    """The kept names (``rows.append(row)``, ``out[k] = row``) inside a loop that writes into the name
    in place and does not bind it again: one object refilled and kept at each turn, the loop's
    keeper holding it at every place. Ids of the kept Name nodes."""
    reused: set[int] = set()
    for loop in nodes:
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            continue
        inner = _scope_nodes(loop.body)
        head = _scope_nodes([ast.Expr(loop.test)]) if isinstance(loop, ast.While) else []  # runs every turn
        written = _refilled(inner) | _filled_by_calls([*inner, *head])
        if not written:
            continue
        bound = _binders(inner) | _loop_binders(loop)
        stored = frozenset(_stored_into(inner))
        for node in inner:
            value: ast.expr | None = None
            names: frozenset[str] = frozenset()
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in KEEPS
                    and len(node.args) > KEEPS[node.func.attr]):
                value = node.args[KEEPS[node.func.attr]]
                names = written
            elif isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Subscript) and not isinstance(t.slice, ast.Slice) for t in node.targets):
                # ``owner[x] = group`` after ``group.append(x)``: every member keyed to its one growing
                # group is the idiom; only a value overwritten in place (``row["acc"] = a``) is a history.
                value, names = node.value, stored
            if isinstance(value, ast.Name) and value.id in names and value.id not in bound:
                reused.add(id(value))
    return reused | _kept_attributes_written(nodes)


def _kept_attributes_written(nodes: Iterable[ast.AST]) -> set[int]:
    """The attributes a function appends to a list (``self.sink.append(self.pending)``) and also writes
    in place (``self.pending.clear()``, ``self.window.append(x)``) without binding them again: one object
    kept at each call, the keeper holding it at every place. Ids of the kept Attribute nodes."""
    nodes = list(nodes)
    written: set[str] = set()
    bound: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                _in_place(node.func.attr) or node.func.attr in KEEPS):
            written.add(_attribute_text(node.func.value))
        elif isinstance(node, ast.Delete):
            written.update(_attribute_text(t.value) for t in node.targets if isinstance(t, ast.Subscript))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for part in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
                    if isinstance(part, ast.Subscript):  # ``self.pending[0] = x``: written, not bound again
                        written.add(_attribute_text(part.value))
                    else:
                        bound.add(_attribute_text(part))
    written -= bound | {""}
    reused: set[int] = set()
    for node in nodes:
        if (written and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in KEEPS
                and len(node.args) > KEEPS[node.func.attr]):
            value = node.args[KEEPS[node.func.attr]]
            if _attribute_text(value) in written:
                reused.add(id(value))
    return reused


def _attribute_text(node: ast.AST) -> str:
    """``name.attr``'s text, else ""."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


def _filled_by_calls(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """The names a loop passes, bare, to a call that may fill them (``stream.readinto(buf)``,
    ``decode(line, row)``): any call but a keep's own (``rows.append(row)``) and a builtin that only
    reads (:data:`PURE`). A keep of such a name at each turn is one object kept again; it is judged
    only if it changed in between, so a call that never writes costs a look and reports nothing."""
    out: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in KEEPS or isinstance(func, ast.Name) and func.id in PURE:
            continue
        for arg in (*node.args, *(k.value for k in node.keywords)):
            if isinstance(arg, ast.Name) and not arg.id.startswith("@"):
                out.add(arg.id)
    return frozenset(out)


def _loop_binders(loop: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """What a loop binds at each turn outside its body: a ``for`` target, or a walrus in a ``while``
    test (``while (item := await q.get()) is not None``)."""
    head = loop.target if isinstance(loop, (ast.For, ast.AsyncFor)) else loop.test
    return _binders(_scope_nodes([ast.Expr(head)]))


def _stored_into(nodes: Iterable[ast.AST]) -> set[str]:
    """The names whose items or attributes are assigned, augmented or deleted (``row["acc"] = a``,
    ``row.n += 1``): written over in place, not only grown."""
    out: set[str] = set()
    for node in nodes:
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            while isinstance(target, (ast.Subscript, ast.Attribute)):  # ``row["meta"]["n"] = i``: row's
                target = target.value
                if isinstance(target, ast.Name):
                    out.add(target.id)
    return out


def _fresh_yields(nodes: Iterable[ast.AST]) -> set[int]:
    """The ``yield name`` nodes inside a loop whose body (or target) binds the name again: a new
    object each turn (``row = {}``), not one the generator refills. Ids of the Yield nodes."""
    fresh: set[int] = set()
    for loop in nodes:
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            continue
        inner = _scope_nodes(loop.body)
        bound = _binders(inner) | _loop_binders(loop)
        fresh.update(id(n) for n in inner if isinstance(n, ast.Yield) and isinstance(n.value, ast.Name)
                     and n.value.id in bound)
    return fresh


def _binders(nodes: Iterable[ast.AST], names: bool = True) -> set[str]:
    """:func:`bound_names` of a scope's nodes, walked once by the caller."""
    out: set[str] = set()
    for node in nodes:
        if type(node) not in _BINDING:
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            if names:
                out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update("*" if a.name == "*" else (a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.add(node.rest)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
    return out


def atom_names(func: ast.FunctionDef | ast.AsyncFunctionDef, module: frozenset[str] | set[str],
               nodes: list[ast.AST] | None = None, everything: list[ast.AST] | None = None) -> frozenset[str]:
    """The local names of *func* that only ever hold atoms: every binding of each is an atom's
    (``i = 0``, ``n = len(x)``, ``i += 1``, ``for i in range(n)``, ``for i, x in enumerate(xs)``'s
    ``i``). Flow-insensitive, so true at every statement; a name declared ``global`` or ``nonlocal``
    here or in a nested scope, a parameter, or bound any other way is not one. *module*: the names
    the module binds (a ``*`` import among them shadows every builtin)."""
    if "*" in module:
        return frozenset()
    if nodes is None:
        nodes = _scope_nodes(func.body)
    local = _binders(nodes)
    shadowed = module | local
    args = func.args
    # Bound otherwise: a parameter, a name declared global or nonlocal (here or in a nested scope),
    # a walrus's target (one in a comprehension binds here too).
    other = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    for node in everything if everything is not None else ast.walk(func):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            other.update(node.names)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            other.add(node.target.id)
    pairs: list[tuple[str, ast.expr]] = []  # (name, the expression bound to it)
    handled: set[int] = set()
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    pairs.append((target.id, node.value))
                    handled.add(id(target))
                elif (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                      and len(target.elts) == len(node.value.elts)):
                    for t, v in zip(target.elts, node.value.elts, strict=True):
                        if isinstance(t, ast.Name):
                            pairs.append((t.id, v))
                            handled.add(id(t))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            pairs.append((node.target.id, ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value)))
            handled.add(id(node.target))
        elif (isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)
              and node.iter.func.id not in shadowed):
            counter = node.iter.func.id
            if counter == "range" and isinstance(node.target, ast.Name):
                pairs.append((node.target.id, ast.Constant(0)))
                handled.add(id(node.target))
            elif (counter == "enumerate" and isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2
                  and isinstance(node.target.elts[0], ast.Name)):
                pairs.append((node.target.elts[0].id, ast.Constant(0)))
                handled.add(id(node.target.elts[0]))
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in handled:
            other.add(node.id)
    other |= _binders(nodes, names=False)
    # The greatest set whose every binding is an atom given the set itself (``i += 1`` needs i).
    atomic = {name for name, _ in pairs} - other
    while True:
        bad = {name for name, value in pairs if name in atomic and not _atom_expr(value, atomic, shadowed)}
        if not bad:
            return frozenset(atomic)
        atomic -= bad


def _fresh_expr(node: ast.expr, atoms: frozenset[str], shadowed: frozenset[str],
                containers: frozenset[str] = frozenset()) -> bool:
    """A new container the expression itself makes: a display, a comprehension, ``[0.0] * n``, a
    container type called (``list(xs)``, ``deque([start])``: a builtin's name neither the module nor
    the function binds, or one of *containers*, the names the module binds only by importing them
    from :mod:`collections` and the function does not bind again)."""
    if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp)):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        return name in containers or name in _BUILTIN_CONTAINERS and name not in shadowed
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)
            and (isinstance(node.left, ast.List) and _atom_expr(node.right, atoms, shadowed)
                 or isinstance(node.right, ast.List) and _atom_expr(node.left, atoms, shadowed)))


_MUTABLE_MAKERS = frozenset({"list", "dict", "set", "bytearray", "defaultdict", "OrderedDict", "Counter", "deque"})
# A module's array or tensor maker (``np.zeros(3)``, ``torch.empty(2, 2)``): a new one each call.
_ARRAY_MAKERS = frozenset({"zeros", "ones", "empty", "full", "array", "tensor", "zeros_like", "ones_like",
                           "empty_like", "full_like"})


def _repetition(node: ast.expr) -> bool:
    """A container holding one new mutable object at every position, by the way it is built: a list
    display of one holding a new mutable value, multiplied (``[[0] * n] * n``, ``[[]] * k``, ``[{}] *
    k``), or ``dict.fromkeys(keys, [])``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return any(isinstance(side, ast.List) and len(side.elts) == 1 and _new_mutable(side.elts[0])
                   for side in (node.left, node.right))
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fromkeys"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "dict" and len(node.args) == 2
            and _new_mutable(node.args[1]))


def _one_each(node: ast.expr) -> str:
    """The fix of a :func:`_repetition`: the same expression, made anew for each position."""
    if isinstance(node, ast.BinOp):
        one, times = (node.left, node.right) if isinstance(node.left, ast.List) else (node.right, node.left)
        return f"[{_text(one.elts[0])} for _ in range({_text(times)})]"  # type: ignore[attr-defined]
    keys, value = node.args  # type: ignore[attr-defined]
    return f"{{k: {_text(value)} for k in {_text(keys)}}}"


def _new_mutable(node: ast.expr) -> bool:
    """A new list, dict, set or such the expression makes: a display, a comprehension, ``[0] * n``, a
    container type called."""
    if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp)):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        return (isinstance(func, ast.Name) and func.id in _MUTABLE_MAKERS) or (
            isinstance(func, ast.Attribute) and (func.attr in _MUTABLE_MAKERS or (
                func.attr in _ARRAY_MAKERS and isinstance(func.value, ast.Name))))
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and (
        isinstance(node.left, ast.List) or isinstance(node.right, ast.List))


def _closed_names(everything: list[ast.AST], own: list[ast.AST]) -> frozenset[str] | None:
    """Names a nested scope reads or binds, or a ``global``/``nonlocal`` declares, anywhere in a
    function (never private: a closure may let one out or bind it again); None when the function
    reaches its own frame's names (``locals()``, ``vars()``, ``exec``, ``eval``). *everything*: the
    function's nodes, nested scopes included; *own*: its own scope's (:func:`_scope_nodes`)."""
    mine = set(map(id, own))
    out: set[str] = set()
    for node in everything:
        if type(node) is ast.Name:
            if id(node) not in mine:
                out.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "locals", "vars", "exec", "eval"):
            return None
    return frozenset(out)


_READS = frozenset({"len", "isinstance", "bool"})  # builtins that keep nothing of a container they are given


def _let_out(stmt: ast.stmt, names: frozenset[str], shadowed: frozenset[str]) -> set[str]:
    """The *names* the statement lets out or binds again: anything but a read of the container in
    place (``x[k]``, ``x.method(...)``, ``len(x)``, ``k in x``, ``for v in x``, a test of its truth).
    A use in a nested function, lambda or comprehension lets it out (a closure holds it)."""
    nodes = list(ast.walk(stmt))
    found = [n for n in nodes if type(n) is ast.Name and n.id in names]
    out = _binders(nodes, names=False) & names  # bound by a def, an import, an except ...
    if not found:
        return out
    parents: dict[int, ast.AST] = {}
    for outer in nodes:
        for child in ast.iter_child_nodes(outer):
            parents[id(child)] = outer
    for node in found:
        parent: ast.AST | None = parents.get(id(node))
        if not isinstance(node.ctx, ast.Load):
            out.add(node.id)
            continue
        scope: ast.AST | None = parent
        while scope is not None and not isinstance(scope, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef,
                                                           ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp,
                                                           ast.GeneratorExp)):
            scope = parents.get(id(scope))
        if scope is not None:
            out.add(node.id)
        elif isinstance(parent, ast.Subscript) and parent.value is node:
            pass
        elif (isinstance(parent, ast.Attribute) and parent.value is node
              and isinstance(parents.get(id(parent)), ast.Call) and parents[id(parent)].func is parent):  # type: ignore[attr-defined]
            pass
        elif (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in _READS
              and parent.func.id not in shadowed and node in parent.args):
            pass
        elif isinstance(parent, ast.Compare) and node in parent.comparators and all(
                isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops):
            pass
        elif isinstance(parent, (ast.For, ast.If, ast.While)) and node in (getattr(parent, "iter", None),
                                                                          getattr(parent, "test", None)):
            pass
        elif isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not) or isinstance(parent, ast.BoolOp) and \
                isinstance(parents.get(id(parent)), (ast.If, ast.While)):
            pass
        else:
            out.add(node.id)
    return out


def _copied_from(call: ast.Call) -> ast.expr | None:
    """The source of an explicit shallow copy call: ``x.copy()``, ``copy.copy(x)``, ``np.copy(x)``,
    ``dict(name)``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in COPIES:
        if not call.args and not call.keywords:
            owner = func.value
            if not (isinstance(owner, ast.Name) and owner.id in ("copy", "np", "numpy")):
                return func.value  # x.copy()
        if (len(call.args) == 1 and not call.keywords and isinstance(func.value, ast.Name)
                and func.value.id in ("copy", "np", "numpy") and not isinstance(call.args[0], ast.Starred)):
            return call.args[0]  # copy.copy(x), np.copy(x)
    if (isinstance(func, ast.Name) and func.id == "copy" and len(call.args) == 1 and not call.keywords
            and not isinstance(call.args[0], ast.Starred)):
        return call.args[0]  # from copy import copy
    if (isinstance(func, ast.Name) and func.id == "dict" and len(call.args) == 1 and not call.keywords
            and isinstance(call.args[0], ast.Name)):
        return call.args[0]  # dict(defaults): a new top level, the same nested parts
    return None


# -- a project state method's recording, in its own body ---------------------------------


def _record_in_body(func: ast.FunctionDef) -> None:
    """Insert a state method's (or another method's) recording into its body, as a wrapper would do
    it around the call, with no frame added: enter, the body, exit in ``finally``.

    Not for a generator, a decorated function or one with no ``self``: discovery wraps those as before.
    """
    params = [*func.args.posonlyargs, *func.args.args]
    if func.decorator_list or not params or _generator(func):
        return
    if func.name not in STATE_NAMES | LOAD_NAMES and func.name in MACHINERY:
        return
    this = _name(params[0].arg)
    body = func.body
    doc = [body[0]] if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                        and isinstance(body[0].value.value, str)) else []
    rest = body[len(doc):] or [ast.Pass()]
    where = rest[0]
    token, result, raised = f"{TEMP}s", f"{TEMP}r", f"{TEMP}e"
    kind = ast.Constant(func.name)
    enter: ast.stmt | None
    if func.name in STATE_NAMES:
        _ReturnCatcher(result).visit_body(rest)
        enter = ast.Assign([ast.Name(token, ast.Store())], ast.Call(_rt("state_enter"), [], []))
        exit_ = _call_stmt("state_exit", _name(token), this, _name(result), _name(raised), kind)
    elif func.name in LOAD_NAMES:
        enter = ast.Assign([ast.Name(token, ast.Store())],
                           ast.Call(_rt("load_enter"), [this, _state_argument(func), kind], []))
        exit_ = _call_stmt("load_exit", _name(token), this, _name(raised))
    else:
        enter = None
        exit_ = _call_stmt("after_call", this)
    temps = [token, result, raised] if enter is not None else []
    running = ast.Compare(_name(token), [ast.IsNot()], [ast.Constant(None)])
    final: list[ast.stmt] = [_guarded(where, exit_, test=running if enter is not None else _rt("ADOPTING"))]
    head: list[ast.stmt] = []
    handlers: list[ast.ExceptHandler] = []
    if enter is not None:
        head = [ast.Assign([ast.Name(t, ast.Store()) for t in temps], ast.Constant(None)),
                _guarded(where, enter, test=_rt("ACTIVE"))]
        final.append(ast.Assign([ast.Name(t, ast.Store()) for t in temps], ast.Constant(None)))
        handlers = [ast.ExceptHandler(_rt("BaseException"), None,
                                      [ast.Assign([ast.Name(raised, ast.Store())], ast.Constant(True)), ast.Raise()])]
    block = ast.Try(body=rest, handlers=handlers, orelse=[], finalbody=final)
    for node in (*head, *final, *handlers):
        _place(node, where)
    ast.copy_location(block, where)
    block.end_lineno, block.end_col_offset = where.end_lineno, where.end_col_offset
    func.body = [*doc, *head, block]


def _state_argument(func: ast.FunctionDef) -> ast.expr:
    """The state a load takes, as its signature binds it: the parameter after self (MISSING: none)."""
    params = [*func.args.posonlyargs, *func.args.args][1:]
    if params:
        return _name(params[0].arg)
    if func.args.vararg is not None:
        return ast.Call(_rt("first"), [_name(func.args.vararg.arg)], [])
    if func.args.kwonlyargs:
        return _name(func.args.kwonlyargs[0].arg)
    return _rt("MISSING")


def _generator(func: ast.FunctionDef) -> bool:
    todo: list[ast.AST] = list(func.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return False


class _ReturnCatcher(ast.NodeVisitor):
    """``return X`` becomes ``return (@acr := X)`` in the function's own body (not nested ones)."""

    def __init__(self, temp: str) -> None:
        self.temp = temp

    def visit_body(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.visit(stmt)

    def visit_Return(self, node: ast.Return) -> None:
        value = node.value
        if value is None:
            value = ast.Constant(None)
            _place(value, node)
        caught = ast.NamedExpr(ast.Name(self.temp, ast.Store()), value)
        _place(caught, value)
        node.value = caught

    def visit_FunctionDef(self, node: ast.AST) -> None:
        return None

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef


_SITE_BITS = 20  # sites per module: a module's numbers are base .. base + 2**20 - 1
_fresh = itertools.count(1)


def module_base(filename: str, source: bytes | str) -> int:
    """A module's first site number, from its path and source: the same in every process, so that
    marked code can be cached (:mod:`aliascheck.markcache`). The top bit keeps these apart from the
    numbers :func:`mark` hands a tree that comes with no source."""
    data = source.encode() if isinstance(source, str) else source
    digest = hashlib.blake2b(filename.encode(errors="surrogateescape") + b"\0" + data, digest_size=5).digest()
    return (1 << 62) | (int.from_bytes(digest, "big") << _SITE_BITS)


def mark(tree: ast.Module, base: int | None = None) -> ast.Module:
    """Rewrite *tree* in place. Nothing is added to the module's namespace: its first statement
    registers its sites' texts with the runtime (``@aliascheck.register(base, table)``), which binds no name."""
    marker = Marker(base if base is not None else next(_fresh) << _SITE_BITS)
    marker.module_names = frozenset(bound_names(tree.body))
    marker.containers = _imported_containers(tree.body)
    marker.context_vars = _context_vars(tree)
    marker.imported = _imported_names(tree.body)
    marker.reused = _reused_keeps(_scope_nodes(tree.body))  # a script's top-level loops
    marker.visit(tree)
    if marker.table:
        _register(tree, marker)
    return tree


def _imported_names(body: list[ast.stmt]) -> frozenset[str]:
    """The names a module's own top-level imports bind (``from .context import request``, ``import
    ctx``): a ContextVar another module made is reached through one of them."""
    out: set[str] = set()
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__":
            out.update(a.asname or a.name for a in stmt.names if a.name != "*")
        elif isinstance(stmt, ast.Import):
            out.update((a.asname or a.name).partition(".")[0] for a in stmt.names)
    return frozenset(out)


def _context_vars(tree: ast.Module) -> frozenset[str]:
    """The names and attribute names a module binds to ``ContextVar(...)`` (or ``contextvars.ContextVar``),
    at any depth: ``request = ContextVar("request")``, ``_map: ContextVar[dict] = ContextVar(...)``,
    ``self.var = ContextVar(...)``. A walk that skips displays of constants (a data module's rows)."""
    found: set[str] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            func = node.value.func
            if (isinstance(func, ast.Name) and func.id == "ContextVar") or (
                    isinstance(func, ast.Attribute) and func.attr == "ContextVar"):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found.add(target.id)
                    elif isinstance(target, ast.Attribute):
                        found.add(target.attr)
        todo.extend(child for child in ast.iter_child_nodes(node) if not _inert(child))
    return frozenset(found)


def _register(tree: ast.Module, marker: Marker) -> None:
    body = tree.body
    at = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        at = 1  # after the docstring
    while at < len(body) and isinstance(body[at], ast.ImportFrom) and getattr(body[at], "module", None) == "__future__":
        at += 1
    table = ast.Tuple([_literal(entry) for entry in marker.table], ast.Load())
    stmt = ast.Try(body=[_call_stmt("register", ast.Constant(marker.base), table)],
                   handlers=[ast.ExceptHandler(_rt("Exception"), None, [ast.Pass()])], orelse=[], finalbody=[])
    _place(stmt, body[at] if at < len(body) else body[-1])
    body.insert(at, stmt)


def _literal(value: Any) -> ast.expr:
    """*value* (strings, numbers, None, tuples and lists of them) as an expression."""
    if isinstance(value, tuple):
        return ast.Tuple([_literal(v) for v in value], ast.Load())
    if isinstance(value, list):
        return ast.List([_literal(v) for v in value], ast.Load())
    return ast.Constant(value)


def _compile(tree: ast.Module, filename: str) -> types.CodeType:
    try:
        return compile(tree, filename, "exec", dont_inherit=True)
    except TypeError:  # a node left without a location: placed from its ancestors, once
        _locate(tree)
        return compile(tree, filename, "exec", dont_inherit=True)


def compile_marked(source: bytes | str, filename: str) -> types.CodeType:
    """*source* compiled marked; compiled as written if the marking fails (a module runs unmarked,
    never broken). Kept in :mod:`aliascheck.markcache`: marked once per source, not once per run."""
    from .. import markcache

    expose()
    data = source.encode() if isinstance(source, str) else source
    entry = markcache.key("module", filename, data)
    code = markcache.load(entry)
    if code is not None:
        return code
    tree = ast.parse(source, filename=filename)
    try:
        code = _compile(mark(tree, module_base(filename, source)), filename)
    except Exception as exc:
        _unmarked(filename, exc)
        return compile(source, filename, "exec", dont_inherit=True)  # not cached: told again next run
    markcache.store(entry, code)
    return code


UNMARKED: dict[str, str] = {}  # a project file whose marking failed -> why: it ran as written (the summary says so)


def _unmarked(filename: str, exc: BaseException) -> None:
    UNMARKED[filename] = f"{type(exc).__name__}: {exc}"


# -- marked code leaving the process ------------------------------------------------

_twins: dict[str, types.CodeType | None] = {}  # a marked file -> its module's code compiled as written


def plain_code(code: types.CodeType) -> types.CodeType:
    """*code* as it would be compiled without marking, for code that leaves the process by value
    (cloudpickle's functions pickled by value: another interpreter, without aliascheck, runs it);
    *code* itself when nothing in it is marked, or when its source cannot be found again."""
    if not _marked(code):
        return code
    filename = code.co_filename
    if filename not in _twins:
        try:
            with open(filename, "rb") as f:
                _twins[filename] = compile(f.read(), filename, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError):
            _twins[filename] = None
    twin = _twins[filename]
    if twin is None:
        return code
    qualname = getattr(code, "co_qualname", code.co_name)  # 3.11+; the name alone before
    todo = [twin]
    while todo:
        candidate = todo.pop()
        if (candidate.co_firstlineno == code.co_firstlineno and candidate.co_name == code.co_name
                and getattr(candidate, "co_qualname", candidate.co_name) == qualname):
            return candidate
        todo.extend(c for c in candidate.co_consts if isinstance(c, types.CodeType))
    return code


def _marked(code: types.CodeType) -> bool:
    todo = [code]
    while todo:
        current = todo.pop()
        if RUNTIME in current.co_names:
            return True
        todo.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return False


# -- where the rewriting happens -------------------------------------------------


class _Loader(importlib.machinery.SourceFileLoader):
    """A project module, compiled marked; never in ``__pycache__`` (a plain run must not meet marked
    bytecode): kept in aliascheck's own cache instead."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return compile_marked(self.get_data(path), path)

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:  # type: ignore[override]
        return None


class Finder(importlib.abc.MetaPathFinder):
    """Finds the project's modules (by *in_project*, a file test) and loads them marked."""

    def __init__(self, in_project: Callable[[str], bool]) -> None:
        self.in_project = in_project

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        origin = spec.origin or ""
        if not origin.endswith(".py") or not self.in_project(origin):
            return spec
        spec.loader = _Loader(fullname, origin)
        return spec


_installed: list[Callable[[], None]] = []


def expose() -> None:
    """Where marked code finds the runtime: one builtins name no source can write (:data:`RUNTIME`).
    It stays once set, so that marked code that outlives a session (a module kept imported) still
    finds the runtime, which then returns at once."""
    import aliascheck.boundary.runtime as boundary

    vars(builtins)[RUNTIME] = boundary.portal


def install(in_project: Callable[[str], bool]) -> None:
    """Mark project modules imported from now on, and test modules pytest rewrites."""
    if _installed:
        return
    expose()
    finder = Finder(in_project)
    hooks = [i for i, f in enumerate(sys.meta_path) if type(f).__name__ == "AssertionRewritingHook"]
    sys.meta_path.insert(hooks[-1] + 1 if hooks else 0, finder)

    def unfind() -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)

    _installed.append(unfind)
    rewrite: Any = sys.modules.get("_pytest.assertion.rewrite")
    names = ("rewrite_asserts", "_rewrite_test", "_read_pyc", "_write_pyc")
    if rewrite is None or not all(hasattr(rewrite, n) for n in names):
        return
    saved = {n: getattr(rewrite, n) for n in names}

    def rewrite_asserts(mod: ast.Module, source: bytes, module_path: str | None = None, config: Any = None) -> None:
        saved["rewrite_asserts"](mod, source, module_path, config)
        if module_path and in_project(os.fspath(module_path)):
            try:  # kept only if it compiles: the module runs unmarked, never broken
                _compile(mark(mod, module_base(os.fspath(module_path), source)), os.fspath(module_path))
            except Exception as exc:  # rare: pytest's rewrite once more, on a fresh tree
                _unmarked(os.fspath(module_path), exc)
                fresh = ast.parse(source, filename=os.fspath(module_path))
                saved["rewrite_asserts"](fresh, source, module_path, config)
                mod.body[:] = fresh.body

    def rewrite_test(fn: Any, config: Any) -> Any:
        """pytest's rewrite of a test module, marked, kept in aliascheck's cache (never in pytest's
        ``__pycache__``, which a plain run reads)."""
        from .. import markcache

        path = os.fspath(fn)
        if not in_project(path):
            return saved["_rewrite_test"](fn, config)
        import pytest

        source = Path(path).read_bytes()
        try:
            hook = str(config.getini("enable_assertion_pass_hook"))
        except Exception:
            hook = "?"
        entry = markcache.key("test", path, source, pytest.__version__, hook)
        code = markcache.load(entry)
        if code is None:
            first, code = saved["_rewrite_test"](fn, config)
            if path not in UNMARKED:  # an unmarked module is not cached: told again next run
                markcache.store(entry, code)
            return first, code
        return importlib.util.source_hash(source), code  # the first is for pytest's pyc, not written

    def read_pyc(source: Any, pyc: Any, *args: Any, **kwargs: Any) -> Any:
        return None if in_project(os.fspath(source)) else saved["_read_pyc"](source, pyc, *args, **kwargs)

    def write_pyc(state: Any, co: Any, *args: Any, **kwargs: Any) -> Any:
        return False if in_project(co.co_filename) else saved["_write_pyc"](state, co, *args, **kwargs)

    rewrite.rewrite_asserts = rewrite_asserts
    rewrite._rewrite_test = rewrite_test
    rewrite._read_pyc = read_pyc
    rewrite._write_pyc = write_pyc

    def unpatch() -> None:
        for name, value in saved.items():
            setattr(rewrite, name, value)

    _installed.append(unpatch)


def uninstall() -> None:
    while _installed:
        _installed.pop()()


def run_script(path: str) -> dict[str, Any]:
    """Run *path* as ``__main__``, marked, as ``runpy.run_path`` would run it unmarked."""
    with open(path, "rb") as f:
        source = f.read()
    try:
        code = compile_marked(source, path)
    except SyntaxError:
        raise
    except Exception:
        code = compile(source, path, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = __builtins__  # type: ignore[attr-defined]
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
    return module.__dict__
