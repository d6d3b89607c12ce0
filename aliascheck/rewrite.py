"""Import-time marking of the project's keep sites and writes, as pytest rewrites asserts.

The project's own modules (and its test modules, through pytest's assertion rewriter, and a
corpus script) are compiled from a rewritten tree. The source is not changed: every inserted
statement sits on the line of the statement it follows, so tracebacks, ``inspect.getsource``
and coverage see the same lines. Nothing is inserted *before* a statement, and nothing wraps
one: a statement runs exactly as written, then (if it completed) one call tells
:mod:`aliascheck.boundary` what it kept or wrote. The call re-reads names and attribute or
subscript chains the statement had just evaluated; anything more complex is not re-evaluated,
and the site is left out. The inserted call sits in ``try: ... except Exception: pass``: it
can never change what the program does.

What is marked (receivers are names, ``a.b`` chains and ``a[k]`` with a name or constant key):

- keep sites: ``r.append(v)``, ``r.appendleft(v)``, ``r.insert(i, v)``, ``r[k] = v``, ``r.a = v``,
  and ``name = call(...)`` (a call's result bound to a name, tuple targets included);
- copies: ``name = x.copy()``, ``copy.copy(x)``, ``np.copy(x)`` (the copy and its source);
- the project's own writes: the receiver of an in-place method (``extend``, ``update``, ``sort``,
  ``fill_``, any ``name_`` method, ...), of ``r[k] = v``, ``r.a = v``, and of ``+=`` and friends.

With ``--aliascheck`` off nothing is rewritten: the hook is installed by the session only.
"""

from __future__ import annotations

import ast
import copy
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Callable
from typing import Any

RUNTIME = "__aliascheck_boundary__"  # the module global the inserted calls go through
# The names of aliascheck.boundary the marked code's own tests read, each bound in a marked module to
# ``__aliascheck_<name>__`` (whatever the module calls id, type or len): see _template.
SHARED = ("WATCHED", "ATOMS", "BUFFERS", "ID", "TYPE", "LEN", "MAP", "REFCOUNT", "ONLY_ATOMS",
          "FED", "SEEN", "HELD", "NOLAST", "_Last", "_PLAIN", "DICT")
# Methods that keep their argument in the receiver (the argument index that is kept).
KEEPS = {"append": 0, "appendleft": 0, "insert": 1}
# Methods that change their receiver in place (torch's ``name_`` convention is added by rule).
WRITES = frozenset({"extend", "extendleft", "update", "pop", "popleft", "popitem", "remove", "clear", "sort",
                    "reverse", "discard", "add", "setdefault", "fill", "resize", "put", "itemset",
                    "__setitem__", "__delitem__", "__iadd__", "setflags", "partition", "byteswap"})
COPIES = frozenset({"copy"})  # x.copy(), copy.copy(x), np.copy(x), numpy.copy(x)
# Builtins that keep none of their arguments (or whose result is all that keeps them): no look.
PURE = frozenset({"len", "print", "isinstance", "issubclass", "sorted", "sum", "min", "max", "str", "int", "float",
                  "bool", "repr", "id", "type", "range", "enumerate", "list", "dict", "tuple", "set", "frozenset",
                  "getattr", "hasattr", "abs", "round", "any", "all", "format", "hash", "callable", "divmod",
                  "pow", "ord", "chr", "bytes", "vars", "dir", "super", "iter", "next", "zip", "map", "filter",
                  "reversed", "open", "setattr", "delattr", "globals", "locals"})


def _in_place(name: str) -> bool:
    return name in WRITES or (name.endswith("_") and not name.startswith("_"))


def _simple(node: ast.expr, depth: int = 4) -> bool:
    """A name, or an attribute/subscript chain over one with constant or name keys: safe to re-read."""
    if isinstance(node, ast.Name):
        return True
    if depth and isinstance(node, ast.Attribute):
        return _simple(node.value, depth - 1)
    if depth and isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, (ast.Constant, ast.Name)) and _simple(node.value, depth - 1)
    return False


def _load(node: ast.expr) -> ast.expr:
    """A fresh load of the simple expression *node*."""
    if isinstance(node, ast.Name):
        return ast.Name(node.id, ast.Load())
    if isinstance(node, ast.Attribute):
        return ast.Attribute(_load(node.value), node.attr, ast.Load())
    assert isinstance(node, ast.Subscript)
    key = node.slice
    fresh = ast.Name(key.id, ast.Load()) if isinstance(key, ast.Name) else ast.Constant(
        key.value if isinstance(key, ast.Constant) else None)
    return ast.Subscript(_load(node.value), fresh, ast.Load())


def _global(name: str) -> str:
    return f"__aliascheck_{name.strip('_').lower()}__"


def _template(text: str, **parts: ast.expr) -> ast.expr:
    """The expression *text*, its one-letter names the expressions *parts* (each read afresh)
    and its other capitalised names aliascheck.boundary's (:data:`SHARED`)."""
    def fill(node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Name) and node.id in parts:
            part = parts[node.id]
            return _load(part) if _simple(part) else copy.deepcopy(part)
        if isinstance(node, ast.Name) and node.id in SHARED:
            return ast.Name(_global(node.id), ast.Load())
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                setattr(node, field, [fill(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, fill(value))
        return node

    return fill(ast.parse(text, mode="eval").body)  # type: ignore[return-value]


def _watched(node: ast.expr) -> ast.expr:
    """The object is recorded, or part of something recorded."""
    return _template("ID(X) in WATCHED", X=node)


def _not_atom(node: ast.expr) -> ast.expr:
    return _template("TYPE(X) not in ATOMS", X=node)


def _buffer(node: ast.expr) -> ast.expr:
    """An array or tensor (a view's write lands in its base's memory)."""
    return _template("TYPE(X) in BUFFERS", X=node)


def _quiet(value: ast.expr, named: bool, keeper: ast.expr) -> ast.expr:
    """What :func:`aliascheck.boundary.kept` returns at once for, told here: a dict or list of atoms
    (at most QUIET_WIDTH) that only the keeper, and the project's own name for it, refers to (the
    keeper's slot and this reading's: 2), kept into anything but an array or tensor (whose write
    may land in a handed view's base, which kept looks up)."""
    from .boundary import QUIET_WIDTH

    return _template(f"TYPE(V) in _PLAIN and REFCOUNT(V) <= {2 + named} "
                     f"and LEN(V) <= {QUIET_WIDTH} and ONLY_ATOMS(MAP(TYPE, V.values() if TYPE(V) is DICT else V)) "
                     "and TYPE(K) not in BUFFERS", V=value, K=keeper)


def _either(*tests: ast.expr) -> ast.expr:
    return ast.BoolOp(ast.Or(), list(tests))


def _root(node: ast.expr) -> ast.expr:
    """The name a simple chain starts from (``groups`` of ``groups[0]``, ``opt`` of ``opt.param_groups[0]``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return _load(node)


def _text(node: ast.expr) -> str:
    try:
        return ast.unparse(node)
    except Exception:
        return "?"


class Marker(ast.NodeTransformer):
    """Append one runtime call after each keep site, copy and write of a module's statements."""

    def __init__(self) -> None:
        self.count = 0
        # name -> what it was last given by, in the scope being marked: "lib.items(), yielded" for a
        # loop's target, the call text for ``name = call(...)``; a report names it as the giver.
        self.given: dict[str, tuple[str, int]] = {}

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        saved, self.given = self.given, {}
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            self.given[arg.arg] = ("", -2)  # a parameter: the caller decides where it came from
        try:
            return self.generic_visit(node)
        finally:
            self.given = saved

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_For(self, node: ast.For) -> ast.AST:
        if isinstance(node.target, ast.Name):
            text = f"{_text(node.iter)}, yielded"
            site = self._site(node.target.id, "loop", text)
            self.given[node.target.id] = (text, site)
            call = ast.Call(ast.Attribute(ast.Name(RUNTIME, ast.Load()), "loop", ast.Load()),
                            [node.iter, ast.Constant(site)], [])
            for part in ast.walk(call):
                if part is call or not hasattr(part, "lineno"):
                    ast.copy_location(part, node.iter)
                    part.end_lineno = node.iter.end_lineno  # type: ignore[attr-defined]
                    part.end_col_offset = node.iter.end_col_offset  # type: ignore[attr-defined]
            node.iter = call
        return self.generic_visit(node)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        """``lambda m, i, out: acts.append(out)`` (a hook): the keep is marked inside the expression.

        The body becomes ``through(acts.append(out), acts, out, site)``: the original call runs first,
        exactly as written, and its result is what the lambda returns.
        """
        saved = dict(self.given)
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            self.given[arg.arg] = ("", -2)
        try:
            self._lambda(node)
        finally:
            self.given = saved
        return node

    def _lambda(self, node: ast.Lambda) -> None:
        self.generic_visit(node)
        body = node.body
        if (isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute) and body.func.attr in KEEPS
                and _simple(body.func.value) and len(body.args) > KEEPS[body.func.attr]
                and _simple(body.args[KEEPS[body.func.attr]]) and not body.keywords):
            receiver, value = body.func.value, body.args[KEEPS[body.func.attr]]
            site = ast.Constant(self._site(_text(receiver), body.func.attr, (_text(value), self._giver(value))))
            source = ast.Constant(self._source(value))
            call = ast.Call(ast.Attribute(ast.Name(RUNTIME, ast.Load()), "through", ast.Load()),
                            [body, _load(receiver), _load(value), site, _root(receiver), source], [])
            for part in ast.walk(call):
                if not hasattr(part, "lineno"):
                    ast.copy_location(part, body)
                    part.end_lineno, part.end_col_offset = body.end_lineno, body.end_col_offset  # type: ignore[attr-defined]
            node.body = call

    def _giver(self, value: ast.expr) -> str:
        if isinstance(value, ast.Name) and value.id in self.given and self.given[value.id][0]:
            return self.given[value.id][0]
        return _text(value)

    def _source(self, value: ast.expr) -> int:
        """Where a kept name came from: a loop's site, -2 for a parameter, -1 unknown."""
        if isinstance(value, ast.Name) and value.id in self.given:
            return self.given[value.id][1]
        return -1

    # Every statement list (module, function and class bodies, loops, branches, with, try) is walked.
    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                out: list[ast.stmt] = []
                for stmt in value:
                    passes = self._passes(stmt)
                    if passes is not None:
                        out.append(passes[0])
                    new = self.visit(stmt)
                    out.append(new)  # type: ignore[arg-type]
                    after = self._after(stmt)
                    if after is not None:
                        out.append(after)
                    if passes is not None:
                        out.append(passes[1])
                setattr(node, field, out)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)
        return node

    def _site(self, keeper: str, how: str, extra: Any = None) -> int:
        from . import boundary

        self.count += 1
        return boundary.site(keeper, how, extra)

    def _call(self, stmt: ast.stmt, fn: str, *args: ast.expr, only: ast.expr | None = None,
              fast: tuple[ast.expr, list[ast.stmt]] | None = None) -> ast.stmt:
        """``try: [if only:] runtime.fn(*args) except Exception: pass`` on the statement's line.

        *only*: a test in the marked code itself, so that the common case (an atom kept, a write
        into something nothing records) costs a type or set lookup, not a call. *fast*: a test and
        the statements that do, in the marked code, all the call would do (``if test: body elif
        only: call``).
        """
        call: ast.stmt = ast.Expr(ast.Call(ast.Attribute(ast.Name(RUNTIME, ast.Load()), fn, ast.Load()),
                                           list(args), []))
        if only is not None:
            call = ast.If(only, [call], [])
        if fast is not None:
            call = ast.If(fast[0], fast[1], [call])
        guarded = ast.Try(body=[call], handlers=[ast.ExceptHandler(ast.Name("Exception", ast.Load()), None,
                                                                   [ast.Pass()])], orelse=[], finalbody=[])
        for node in ast.walk(guarded):  # the statement's own line: tracebacks and coverage are unchanged
            ast.copy_location(node, stmt)
            node.end_lineno, node.end_col_offset = stmt.end_lineno, stmt.end_col_offset  # type: ignore[attr-defined]
        return guarded

    def _kept(self, stmt: ast.stmt, keeper: ast.expr, value: ast.expr, site: int, named: bool,
              attr: str | None, root: ast.expr, source: int) -> ast.stmt:
        """``runtime.kept(keeper, value, ...)``, called only when it could record or judge something.

        Not called for an atom kept into something nothing records, nor for a dict or list of atoms
        the keeper alone holds (:func:`_quiet`). An item of the project's own generator (*source*,
        a loop site in ``FED``) kept into something nothing records is compared with the site's
        last one here: a different object becomes the last (kept's own bookkeeping, for the types
        a ``_Last`` holds itself); the same one, a history of one object, calls kept.
        """
        only = _either(ast.BoolOp(ast.And(), [_not_atom(_load(value)),
                                               ast.UnaryOp(ast.Not(), _quiet(value, named, keeper))]),
                       _watched(keeper))
        fast: tuple[ast.expr, list[ast.stmt]] | None = None
        if source >= 0:
            test = _template(f"{source} in FED and TYPE(V) in HELD and ID(K) not in WATCHED "
                             f"and TYPE(K) not in BUFFERS and SEEN.get({site}, NOLAST)[0] is not V",
                             V=value, K=keeper)
            store = ast.Assign([ast.Subscript(ast.Name(_global("SEEN"), ast.Load()), ast.Constant(site),
                                              ast.Store())], _template("_Last((V, 1, True))", V=value))
            fast = (test, [store])
        return self._call(stmt, "kept", _load(keeper), _load(value), ast.Constant(site), ast.Constant(named),
                          ast.Constant(attr), root, ast.Constant(source), only=only, fast=fast)

    def _passes(self, stmt: ast.stmt) -> tuple[ast.stmt, ast.stmt] | None:
        """Around a statement whose calls take names: what each call's callee kept of them.

        The names (and simple chains) are read once before the statement and once after it; the
        runtime compares their reference counts. Reading a name before is safe: an unbound one
        raises inside the guarded call, and the statement then raises it itself.
        """
        if isinstance(stmt, ast.Expr):
            value: ast.expr | None = stmt.value
            result: ast.expr | None = None
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            value = stmt.value
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            result = targets[0] if len(targets) == 1 and _simple(targets[0]) else None
        else:
            return None
        if value is None:
            return None
        calls = []
        for call in _calls(value):
            func = call.func
            if (isinstance(func, ast.Attribute) and (func.attr in KEEPS or func.attr in WRITES)) or (
                    isinstance(func, ast.Name) and func.id in PURE):
                continue  # a container's own method (kept/wrote say it), or a builtin that keeps nothing
            names = [a for a in (*call.args, *(k.value for k in call.keywords if k.arg is not None))
                     if not isinstance(a, ast.Starred) and _simple(a)]
            if names:
                func = _load(call.func) if _simple(call.func) else ast.Constant(None)
                calls.append((call, func, names))
        if not calls:
            return None
        extra = [(_text(c.func), [_text(n) for n in names]) for c, _, names in calls]
        site = ast.Constant(self._site(" / ".join(_text(c.func) for c, _, _ in calls), "pass", extra))

        def pairs() -> ast.expr:
            return ast.Tuple([ast.Tuple([_fresh(func), ast.Tuple([_load(n) for n in names], ast.Load())],
                                        ast.Load()) for _, func, names in calls], ast.Load())

        before = self._call(stmt, "before", site, pairs())
        after = self._call(stmt, "after", site, pairs(), _load(result) if result is not None else ast.Constant(None))
        return before, after

    def _after(self, stmt: ast.stmt) -> ast.stmt | None:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            return self._method(stmt, stmt.value)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            return self._assign(stmt, stmt.targets[0], stmt.value)
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            return self._assign(stmt, stmt.target, stmt.value)
        if isinstance(stmt, ast.AugAssign):
            target = stmt.target
            if isinstance(target, (ast.Subscript, ast.Attribute)) and _simple(target.value):
                return self._call(stmt, "wrote", _load(target.value), _root(target.value),
                                  only=_watched(target.value))
            if isinstance(target, ast.Name):  # ``sample -= mean``: an array's or tensor's memory, maybe a view's
                return self._call(stmt, "wrote", _load(target), _load(target),
                                  only=_either(_watched(target), _buffer(target)))
        return None

    def _method(self, stmt: ast.stmt, call: ast.Call) -> ast.stmt | None:
        func = call.func
        # x.mul_(a).add_(b): the in-place chain writes its innermost receiver.
        while (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
               and isinstance(func.value.func, ast.Attribute) and _in_place(func.attr)
               and _in_place(func.value.func.attr)):
            func = func.value.func
        if not isinstance(func, ast.Attribute) or not _simple(func.value) or any(
                isinstance(a, ast.Starred) for a in call.args):
            return None
        name, receiver = func.attr, func.value
        if name in KEEPS and len(call.args) > KEEPS[name]:
            value = call.args[KEEPS[name]]
            number = self._site(_text(receiver), name, (_text(value), self._giver(value)))
            if _simple(value):
                return self._kept(stmt, receiver, value, number, True, None, _root(receiver), self._source(value))
            site = ast.Constant(number)
            if name == "append":  # the value is the receiver's last item now
                last = ast.Subscript(_load(receiver), ast.UnaryOp(ast.USub(), ast.Constant(1)), ast.Load())
                return self._call(stmt, "appended", _load(receiver), site, _root(receiver),
                                  only=_either(_not_atom(last), _watched(receiver)))
            return self._call(stmt, "wrote", _load(receiver), _root(receiver), only=_watched(receiver))
        if _in_place(name):
            return self._call(stmt, "wrote", _load(receiver), _root(receiver),
                              only=_either(_watched(receiver), _buffer(receiver)))
        return None

    def _assign(self, stmt: ast.stmt, target: ast.expr, value: ast.expr) -> ast.stmt | None:
        if isinstance(target, (ast.Subscript, ast.Attribute)) and _simple(target.value):
            if isinstance(target, ast.Subscript) and not isinstance(target.slice, (ast.Constant, ast.Name)):
                return self._call(stmt, "wrote", _load(target.value), _root(target.value),  # a slice, a computed key
                                  only=_either(_watched(target.value), _buffer(target.value)))
            site = self._site(_text(target), "item" if isinstance(target, ast.Subscript) else "attr",
                              (_text(value), self._giver(value)))
            kept = value if _simple(value) else target
            return self._kept(stmt, target.value, kept, site, _simple(value),
                              target.attr if isinstance(target, ast.Attribute) else None, _root(target.value),
                              self._source(value))
        if isinstance(target, ast.Name) and isinstance(value, ast.Call):
            self.given[target.id] = (_text(value), -1)
            return self._bound(stmt, [(target, value)])
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs = [(t, v) for t, v in zip(target.elts, value.elts, strict=True)
                     if isinstance(t, ast.Name) and isinstance(v, ast.Call)]
            return self._bound(stmt, pairs) if pairs else None
        return None

    def _bound_only(self, stmt: ast.stmt, target: ast.Name, call: ast.Call) -> ast.expr:
        """``name = call(...)`` calls out unless the result is an atom, or the callee a method of one
        (``words = line.split()``: a method of a str, a number or bytes hands out nothing live).

        The receiver is read again after the statement, unless the statement rebinds its name."""
        func = call.func
        if isinstance(func, ast.Attribute) and _simple(func.value) and _root(func.value).id not in _stored(stmt):  # type: ignore[attr-defined]
            return _template("TYPE(V) not in ATOMS and TYPE(O) not in ATOMS", V=target, O=func.value)
        return _not_atom(_load(target))

    def _bound(self, stmt: ast.stmt, pairs: list[tuple[ast.Name, ast.Call]]) -> ast.stmt | None:
        calls: list[ast.stmt] = []
        for target, call in pairs:
            source = _copied_from(call)
            if source is not None:
                site = ast.Constant(self._site(target.id, "copy", _text(call)))
                calls.append(self._call(stmt, "copied", _load(target), _load(source), site))
            else:
                site = ast.Constant(self._site(target.id, "name", _text(call)))
                calls.append(self._call(stmt, "bound", _load(target), site, ast.Constant(_text(call.func)),
                                        only=self._bound_only(stmt, target, call)))
        if len(calls) == 1:
            return calls[0]
        block = ast.If(ast.Constant(True), calls, [])
        for node in (block, block.test):
            ast.copy_location(node, stmt)
            node.end_lineno, node.end_col_offset = stmt.end_lineno, stmt.end_col_offset  # type: ignore[attr-defined]
        return block


def _stored(stmt: ast.stmt) -> set[str]:
    """The names a statement binds."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


def _fresh(node: ast.expr) -> ast.expr:
    return ast.Constant(node.value) if isinstance(node, ast.Constant) else _load(node)


def _calls(node: ast.expr) -> list[ast.Call]:
    """The calls of an expression, outermost first, not those inside a lambda or a comprehension."""
    out: list[ast.Call] = []
    todo = [node]
    while todo:
        current = todo.pop(0)
        if isinstance(current, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(current, ast.Call):
            out.append(current)
        todo.extend(c for c in ast.iter_child_nodes(current) if isinstance(c, ast.expr))
    return out


def _copied_from(call: ast.Call) -> ast.expr | None:
    """The source of an explicit shallow copy call: ``x.copy()``, ``copy.copy(x)``, ``np.copy(x)``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in COPIES:
        if not call.args and not call.keywords and _simple(func.value):
            owner = func.value
            if not (isinstance(owner, ast.Name) and owner.id in ("copy", "np", "numpy")):
                return func.value  # x.copy()
        if (len(call.args) == 1 and isinstance(func.value, ast.Name) and func.value.id in ("copy", "np", "numpy")
                and _simple(call.args[0])):
            return call.args[0]  # copy.copy(x), np.copy(x)
    if isinstance(func, ast.Name) and func.id == "copy" and len(call.args) == 1 and _simple(call.args[0]):
        return call.args[0]  # from copy import copy
    return None


def mark(tree: ast.Module) -> ast.Module:
    """Rewrite *tree* in place: the runtime import first (after docstring and ``__future__``), then the marks."""
    marker = Marker()
    marker.visit(tree)
    body = tree.body
    if not marker.count or not body:
        return tree
    at = 0
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
            body[0].value.value, str):
        at = 1
    while at < len(body) and isinstance(body[at], ast.ImportFrom) and body[at].module == "__future__":  # type: ignore[attr-defined]
        at += 1
    imports = [ast.Import([ast.alias("aliascheck.boundary", RUNTIME)]),
               ast.ImportFrom("aliascheck.boundary", [ast.alias(name, _global(name)) for name in SHARED], 0)]
    where = body[at] if at < len(body) else body[-1]
    for imp in reversed(imports):
        for node in ast.walk(imp):
            ast.copy_location(node, where)
            node.end_lineno, node.end_col_offset = where.lineno, where.col_offset  # type: ignore[attr-defined]
        body.insert(at, imp)
    return tree


def compile_marked(source: bytes | str, filename: str) -> types.CodeType:
    tree = ast.parse(source, filename=filename)
    return compile(mark(tree), filename, "exec", dont_inherit=True)


# -- where the rewriting happens -------------------------------------------------


class _Loader(importlib.machinery.SourceFileLoader):
    """A project module, compiled marked; never cached (a plain run must not meet marked bytecode)."""

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


def install(in_project: Callable[[str], bool]) -> None:
    """Mark project modules imported from now on, and test modules pytest rewrites."""
    if _installed:
        return
    finder = Finder(in_project)
    hooks = [i for i, f in enumerate(sys.meta_path) if type(f).__name__ == "AssertionRewritingHook"]
    sys.meta_path.insert(hooks[-1] + 1 if hooks else 0, finder)

    def unfind() -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)

    _installed.append(unfind)
    rewrite: Any = sys.modules.get("_pytest.assertion.rewrite")
    if rewrite is None or not hasattr(rewrite, "rewrite_asserts") or not hasattr(rewrite, "PYC_TAIL"):
        return
    original, tail = rewrite.rewrite_asserts, rewrite.PYC_TAIL

    def rewrite_asserts(mod: ast.Module, source: bytes, module_path: str | None = None, config: Any = None) -> None:
        original(mod, source, module_path, config)
        if module_path and in_project(os.fspath(module_path)):
            try:
                mark(mod)
            except Exception:  # the module runs unmarked, never broken
                pass

    rewrite.rewrite_asserts = rewrite_asserts
    rewrite.PYC_TAIL = ".aliascheck" + tail  # marked test modules are cached apart from plain ones

    def unpatch() -> None:
        rewrite.rewrite_asserts, rewrite.PYC_TAIL = original, tail

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
