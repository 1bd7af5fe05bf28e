"""Python mutants: one small change to one node of a module's syntax tree.

Each ``Mutant`` is compiled straight from the changed tree (no source is rewritten), so line
numbers stay those of the file and tests are selected by the lines the mutant touches.

Operators:

- ``compare``: ``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``is``/``is not``, ``in``/``not in``
- ``boolop``: ``and``/``or``, and dropping one operand of an ``and``/``or``
- ``not``: ``not x`` becomes ``x``; ``if c`` becomes ``if not c`` (and conditional expressions)
- ``arith``: ``+``/``-``, ``*``/``/``, ``**`` to ``*``, ``//`` to ``/``, ``+=``/``-=``, unary minus
- ``number``: an int or float constant plus one; ``True``/``False``
- ``member``: an enum member (``JobState.RUNNING``) becomes the next member of its enum
- ``call``: ``min``/``max``, ``any``/``all``
- ``keyword``: a call loses one keyword argument (``finalized_at=now``, ``**extra``)
- ``entry``: a dict display loses one entry (a row of ``TRANSITIONS``, a cleared field)
- ``filter``: a comprehension loses one ``if`` clause
- ``statement``: an expression statement, ``raise``, ``if``, ``for``, ``while``, ``del``, an
  augmented assignment, an assignment to an attribute or item, ``break`` or ``continue`` becomes
  ``pass``

Not mutated: docstrings, annotations, string constants (error texts are pinned by the lifecycle
document's own test), ``__all__``, and lines marked ``# pragma: no mutate``.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType

__all__ = ["Mutant", "enum_members", "python_mutants"]

_COMPARE = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BINOP = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.Pow: ast.Mult,
    ast.FloorDiv: ast.Div,
}
_CALLS = {"min": "max", "max": "min", "any": "all", "all": "any"}
_DELETABLE = (
    ast.Expr,
    ast.Raise,
    ast.If,
    ast.For,
    ast.While,
    ast.Delete,
    ast.AugAssign,
    ast.Break,
    ast.Continue,
)


@dataclass
class Mutant:
    """One change to one file. ``lines`` are the lines it touches; ``scope`` the lines whose
    tests must run when no test reaches ``lines`` themselves (code that runs at import)."""

    path: str
    line: int
    operator: str
    description: str
    function: str
    lines: range
    scope: range | None = None
    code: CodeType | None = field(default=None, repr=False)
    #: for SQL mutants: (file name, mutated text, the statements that include the file)
    sql: tuple[str, str, tuple[str, ...]] | None = None
    #: the outermost function whose body holds the change, and its body's lines: such a
    #: mutant can be swapped in as that function's new code (``__code__``)
    outer: tuple[str, range] | None = None

    @property
    def key(self) -> str:
        """Stable enough to recognise a mutant across runs: file, function, change."""
        return f"{self.path}::{self.function} {self.operator}: {self.description}"


def enum_members(paths: list[Path]) -> dict[str, list[str]]:
    """``{enum class name: member names in order}`` for every ``Enum`` subclass in ``paths``,
    read from the source (the runner's parent process never imports the code it mutates)."""
    members: dict[str, list[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(b) for b in node.bases):
                names = [
                    t.id
                    for stmt in node.body
                    if isinstance(stmt, ast.Assign)
                    for t in stmt.targets
                    if isinstance(t, ast.Name) and t.id.isupper()
                ]
                if len(names) > 1:
                    members[node.name] = names
    return members


# -- finding the sites ----------------------------------------------------------------------


@dataclass
class _Site:
    index: int  # the node's position in ast.walk order: the same in a deep copy
    operator: str
    describe: str
    apply: Callable[[ast.AST], ast.AST | None]  # returns a replacement, or None: changed in place


def _skipped_lines(source: str) -> set[int]:
    return {n for n, text in enumerate(source.splitlines(), 1) if "pragma: no mutate" in text}


def _not_mutated(tree: ast.Module) -> set[int]:
    """Ids of nodes never mutated: docstrings, annotations, ``__all__``."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            mark(body[0])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark(node.returns)
            for arg in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                mark(arg.annotation)
            for arg in (node.args.vararg, node.args.kwarg):
                if arg is not None:
                    mark(arg.annotation)
        if isinstance(node, ast.AnnAssign):
            mark(node.annotation)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            mark(node)  # a ``...`` body of a protocol's method
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                mark(node)
    return skip


def _sites(node: ast.AST, index: int, members: dict[str, list[str]]) -> Iterator[_Site]:
    """Every change the operators can make to ``node`` itself."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            new = _COMPARE.get(type(op))
            if new is not None:

                def swap(n: ast.AST, i: int = i, new: type = new) -> None:
                    n.ops[i] = new()  # type: ignore[attr-defined]

                yield _Site(index, "compare", f"{_op(op)} -> {_op(new())}", swap)
    elif isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And

        def flip(n: ast.AST, other: type = other) -> None:
            n.op = other()  # type: ignore[attr-defined]

        yield _Site(index, "boolop", f"{_op(node.op)} -> {_op(other())}", flip)
        for i, value in enumerate(node.values):

            def drop(n: ast.AST, i: int = i) -> ast.AST:
                values = [v for j, v in enumerate(n.values) if j != i]  # type: ignore[attr-defined]
                return values[0] if len(values) == 1 else ast.BoolOp(n.op, values)  # type: ignore[attr-defined]

            yield _Site(index, "boolop", f"drop operand {_short(value)}", drop)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        yield _Site(index, "not", f"drop {_op(node.op)} of {_short(node.operand)}", _operand)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP:
        new = _BINOP[type(node.op)]

        def arith(n: ast.AST, new: type = new) -> None:
            n.op = new()  # type: ignore[attr-defined]

        yield _Site(index, "arith", f"{_op(node.op)} -> {_op(new())}", arith)
    elif isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
        new = _BINOP[type(node.op)]

        def aug(n: ast.AST, new: type = new) -> None:
            n.op = new()  # type: ignore[attr-defined]

        yield _Site(index, "arith", f"{_op(node.op)}= -> {_op(new())}=", aug)
    elif isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
        value = node.value
        if isinstance(value, bool):
            yield _Site(index, "number", f"{value} -> {not value}", _set_constant(not value))
        elif isinstance(value, (int, float)):
            yield _Site(index, "number", f"{value!r} -> {value + 1!r}", _set_constant(value + 1))
    elif (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and isinstance(node.ctx, ast.Load)
    ):
        names = members.get(_ENUM_ALIASES.get(node.value.id, node.value.id))
        if names and node.attr in names:
            new_attr = names[(names.index(node.attr) + 1) % len(names)]

            def member(n: ast.AST, new_attr: str = new_attr) -> None:
                n.attr = new_attr  # type: ignore[attr-defined]

            yield _Site(index, "member", f"{node.value.id}.{node.attr} -> {new_attr}", member)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in _CALLS:
            other_name = _CALLS[node.func.id]

            def rename(n: ast.AST, other_name: str = other_name) -> None:
                n.func = ast.Name(other_name, ast.Load())  # type: ignore[attr-defined]

            yield _Site(index, "call", f"{node.func.id}() -> {other_name}()", rename)
        for i, kw in enumerate(node.keywords):

            def drop_kw(n: ast.AST, i: int = i) -> None:
                del n.keywords[i]  # type: ignore[attr-defined]

            name = f"**{_short(kw.value)}" if kw.arg is None else f"{kw.arg}="
            yield _Site(index, "keyword", f"drop {name} in {_short(node.func)}()", drop_kw)
    elif isinstance(node, ast.Dict):
        for i, key in enumerate(node.keys):

            def drop_entry(n: ast.AST, i: int = i) -> None:
                del n.keys[i]  # type: ignore[attr-defined]
                del n.values[i]  # type: ignore[attr-defined]

            shown = f"**{_short(node.values[i])}" if key is None else _short(key)
            yield _Site(index, "entry", f"drop entry {shown}", drop_entry)
    elif isinstance(node, ast.comprehension):
        for i, cond in enumerate(node.ifs):

            def drop_if(n: ast.AST, i: int = i) -> None:
                del n.ifs[i]  # type: ignore[attr-defined]

            yield _Site(index, "filter", f"drop filter if {_short(cond)}", drop_if)
    if isinstance(node, (ast.If, ast.IfExp, ast.While)):

        def negate(n: ast.AST) -> None:
            n.test = ast.UnaryOp(ast.Not(), n.test)  # type: ignore[attr-defined]

        yield _Site(index, "not", f"negate condition {_short(node.test)}", negate)
    if isinstance(node, _DELETABLE) or (
        isinstance(node, ast.Assign)
        and all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets)
    ):
        yield _Site(index, "statement", f"delete `{_short(node)}`", _to_pass)


#: names a module gives an enum locally (``S = JobState``)
_ENUM_ALIASES = {"S": "JobState", "T": "Trigger"}


def _operand(n: ast.AST) -> ast.AST:
    return n.operand  # type: ignore[attr-defined,no-any-return]


def _to_pass(n: ast.AST) -> ast.AST:
    return ast.Pass()


def _set_constant(value: object) -> Callable[[ast.AST], None]:
    def apply(n: ast.AST) -> None:
        n.value = value  # type: ignore[attr-defined]

    return apply


def _op(op: ast.AST) -> str:
    symbols = {
        ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
        ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.And: "and",
        ast.Or: "or", ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
        ast.FloorDiv: "//", ast.Not: "not", ast.USub: "-",
    }  # fmt: skip
    return symbols[type(op)]


def _short(node: ast.AST, width: int = 60) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= width else text[: width - 1] + "…"


# -- building the mutants -------------------------------------------------------------------


@dataclass
class _Scopes:
    """Per node id: the name of the function holding it; for nodes that run at import
    (module and class level, a function's signature) the lines whose tests to run; for nodes
    in a function's body, the outermost such function and its body's lines."""

    names: dict[int, str] = field(default_factory=dict)
    import_time: dict[int, range] = field(default_factory=dict)
    outer: dict[int, tuple[str, range]] = field(default_factory=dict)


def _scopes(tree: ast.Module) -> _Scopes:
    found = _Scopes()
    everything = range(1, max(getattr(n, "end_lineno", 1) or 1 for n in ast.walk(tree)) + 1)

    def visit(
        node: ast.AST, name: str, at_import: range | None, outer: tuple[str, range] | None
    ) -> None:
        found.names[id(node)] = name
        if at_import is not None:
            found.import_time[id(node)] = at_import
        if outer is not None:
            found.outer[id(node)] = outer
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = f"{name}.{node.name}" if name != "<module>" else node.name
            body = range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1)
            for child in [*node.decorator_list, node.args]:
                visit(child, inner, body if at_import is not None else None, outer)
            for stmt in node.body:
                visit(stmt, inner, None, outer or (inner, body))
            return
        if isinstance(node, ast.ClassDef):
            inner = f"{name}.{node.name}" if name != "<module>" else node.name
            for child in ast.iter_child_nodes(node):
                visit(child, inner, at_import, outer)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, name, at_import, outer)

    for stmt in tree.body:
        visit(stmt, "<module>", everything, None)
    return found


def python_mutants(path: Path, shown_path: str, members: dict[str, list[str]]) -> list[Mutant]:
    """Every mutant of one file, each compiled and ready to run."""
    source = path.read_text()
    tree = ast.parse(source, filename=str(path))
    skip = _not_mutated(tree)
    skipped_lines = _skipped_lines(source)
    scopes = _scopes(tree)
    nodes = list(ast.walk(tree))
    mutants: list[Mutant] = []
    for index, node in enumerate(nodes):
        if id(node) in skip or getattr(node, "lineno", None) in skipped_lines:
            continue
        for site in _sites(node, index, members):
            mutated = copy.deepcopy(tree)
            target = list(ast.walk(mutated))[site.index]
            replacement = site.apply(target)
            if replacement is not None:
                _replace(mutated, target, ast.copy_location(replacement, target))
            ast.fix_missing_locations(mutated)
            try:
                code = compile(mutated, str(path), "exec")
            except (SyntaxError, ValueError):
                continue  # e.g. deleting the only statement of a block that needs one
            line, end = _position(node)
            mutants.append(
                Mutant(
                    path=shown_path,
                    line=line,
                    operator=site.operator,
                    description=site.describe,
                    function=scopes.names.get(id(node), "<module>"),
                    lines=range(line, end + 1),
                    scope=scopes.import_time.get(id(node)),
                    code=code,
                    outer=scopes.outer.get(id(node)),
                )
            )
    return mutants


def _position(node: ast.AST) -> tuple[int, int]:
    """First and last line of ``node``; a node without a position of its own (a
    comprehension's ``for ... if ...``) spans its children."""
    if getattr(node, "lineno", None) is not None:
        return node.lineno, getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
    lines = [n.lineno for n in ast.walk(node) if getattr(n, "lineno", None) is not None]  # type: ignore[attr-defined]
    ends = [getattr(n, "end_lineno", 0) or 0 for n in ast.walk(node)]
    return (min(lines), max(max(ends), max(lines))) if lines else (0, 0)


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[next(i for i, v in enumerate(value) if v is old)] = new
                return
    raise LookupError("node to replace not found")
