"""SQL mutants: one small change to one statement file (``.sql``) or shared part (``.sqlpart``)
of the PostgreSQL adapter. A part's mutant changes every statement that includes it.

The statements are short and written one clause per line, so a few textual operators cover what
can go wrong in them. Comments (``--`` lines) and the placeholders (``%(name)s``) are never
touched.

Operators:

- ``lock``: drop ``SKIP LOCKED``; drop a ``FOR UPDATE`` clause
- ``compare``: ``<``/``<=``, ``>``/``>=``, ``=`` to ``<>`` (not in a ``SET`` list)
- ``boolop``: ``AND``/``OR``; drop a whole ``AND``/``OR`` line of a condition
- ``not``: ``NOT EXISTS`` to ``EXISTS``, ``IS NULL`` to ``IS NOT NULL``
- ``in``: drop one value of an ``IN (...)`` list
- ``set``: drop one assignment of an ``UPDATE ... SET`` list
- ``limit``: drop ``LIMIT``; ``order``: the first ``ORDER BY`` key descending
- ``arith``: ``+``/``-``; ``literal``: ``true``/``false``; ``distinct``: drop ``DISTINCT``
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from mutation.python_ops import Mutant

__all__ = ["sql_mutants", "statements_using"]

_PART = re.compile(r"\{part:(\w+)\}")

_LINE_OPERATORS: list[tuple[str, re.Pattern[str], str, str]] = [
    ("lock", re.compile(r" SKIP LOCKED\b"), "", "drop SKIP LOCKED"),
    ("lock", re.compile(r"\s*\bFOR UPDATE\b(?: OF \w+)?(?: SKIP LOCKED)?"), "", "drop FOR UPDATE"),
    ("not", re.compile(r"\bNOT EXISTS\b"), "EXISTS", "NOT EXISTS -> EXISTS"),
    ("not", re.compile(r"\bIS NULL\b"), "IS NOT NULL", "IS NULL -> IS NOT NULL"),
    ("boolop", re.compile(r"\bAND\b"), "OR", "AND -> OR"),
    ("boolop", re.compile(r"\bOR\b"), "AND", "OR -> AND"),
    ("limit", re.compile(r"\bLIMIT %\(\w+\)s"), "", "drop LIMIT"),
    ("arith", re.compile(r" \+ "), " - ", "+ -> -"),
    ("arith", re.compile(r" - "), " + ", "- -> +"),
    ("literal", re.compile(r"\bfalse\b"), "true", "false -> true"),
    ("literal", re.compile(r"\btrue\b"), "false", "true -> false"),
    ("distinct", re.compile(r"\bDISTINCT "), "", "drop DISTINCT"),
    ("compare", re.compile(r"(?<![<>!:=])<=(?!=)"), "<", "<= -> <"),
    ("compare", re.compile(r"(?<![<>!:=])>=(?!=)"), ">", ">= -> >"),
    ("compare", re.compile(r"(?<![<>!:=-])<(?![=>])"), "<=", "< -> <="),
    ("compare", re.compile(r"(?<![<>!:=-])>(?![=])"), ">=", "> -> >="),
]
_EQUALS = re.compile(r"(?<![<>!:=])=(?![=>])")
_ASSIGNMENT = re.compile(r"^\s*(?:SET\s+)?\w+ = ")
_IN_LIST = re.compile(r"\bIN \(((?:'[^']*'(?:, )?)+)\)")
_ORDER_BY = re.compile(r"\bORDER BY ([\w.]+)")
_CLAUSE_END = re.compile(r"(FROM|WHERE|RETURNING)\b")


def _placeholders(line: str) -> list[range]:
    return [range(m.start(), m.end()) for m in re.finditer(r"%\(\w+\)s|'[^']*'", line)]


def _free(line: str, start: int) -> bool:
    """Not inside a placeholder or a string literal."""
    return not any(start in span for span in _placeholders(line))


def _line_mutants(lines: list[str]) -> Iterator[tuple[int, str, str, list[str]]]:
    """``(line number, operator, description, mutated lines)`` for the one-line operators."""
    for number, text in enumerate(lines, 1):
        if text.lstrip().startswith("--"):
            continue
        for operator, pattern, replacement, description in _LINE_OPERATORS:
            for match in pattern.finditer(text):
                if not _free(text, match.start()):
                    continue
                changed = text[: match.start()] + replacement + text[match.end() :]
                yield number, operator, description, _with(lines, number, changed)
        if not _ASSIGNMENT.match(text) and "SET " not in text:
            for match in _EQUALS.finditer(text):
                if _free(text, match.start()):
                    changed = text[: match.start()] + "<>" + text[match.end() :]
                    yield number, "compare", "= -> <>", _with(lines, number, changed)
        for match in _IN_LIST.finditer(text):
            values = [v.strip() for v in match.group(1).split(",")]
            for value in values:
                kept = ", ".join(v for v in values if v != value)
                changed = text[: match.start(1)] + kept + text[match.end(1) :]
                yield number, "in", f"drop {value} from IN list", _with(lines, number, changed)
        match = _ORDER_BY.search(text)
        if match:
            changed = text[: match.end(1)] + " DESC" + text[match.end(1) :]
            yield number, "order", f"ORDER BY {match.group(1)} DESC", _with(lines, number, changed)
        stripped = text.lstrip()
        if re.match(r"(AND|OR) ", stripped) and stripped.count("(") == stripped.count(")"):
            yield number, "boolop", f"drop line `{stripped.strip()}`", _without(lines, number)


def _with(lines: list[str], number: int, text: str) -> list[str]:
    return [*lines[: number - 1], text, *lines[number:]]


def _without(lines: list[str], number: int) -> list[str]:
    return [*lines[: number - 1], *lines[number:]]


def _set_items(text: str, start: int) -> list[tuple[int, int]]:
    """Spans of the assignments of the ``SET`` list starting at ``start``: split at the
    top-level commas, up to the clause that ends the list."""
    items, depth, begin, at = [], 0, start, start
    while at < len(text):
        char = text[at]
        if char == "'":
            at = text.index("'", at + 1)
        elif char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and char == ",":
            items.append((begin, at))
            begin = at + 1
        elif depth == 0 and _CLAUSE_END.match(text, at) and text[at - 1].isspace():
            break
        at += 1
    items.append((begin, len(text[:at].rstrip())))
    return [(s + len(text[s:e]) - len(text[s:e].lstrip()), e) for s, e in items]


def _set_mutants(text: str) -> Iterator[tuple[int, str, str, str]]:
    """Drop one assignment of each ``SET`` list of two or more (the last one takes the comma
    before it along, so the statement stays valid)."""
    for match in re.finditer(r"\bSET (?!LOCAL)", text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if text[line_start:].lstrip().startswith("--"):
            continue
        items = _set_items(text, match.end())
        if len(items) < 2:
            continue
        for position, (begin, end) in enumerate(items):
            if position < len(items) - 1:
                mutated = text[:begin] + text[items[position + 1][0] :]
            else:
                mutated = text[: items[position - 1][1]] + text[end:]
            column = text[begin:end].split("=")[0].strip()
            yield text.count("\n", 0, begin) + 1, "set", f"drop SET {column}", mutated


def statements_using(folder: Path) -> dict[str, tuple[str, ...]]:
    """``{file name: the statements that run its text}``: a statement file its own statement,
    a part every statement that includes it, directly or through another part."""
    texts = {p.name: p.read_text() for p in folder.iterdir() if p.suffix in (".sql", ".sqlpart")}

    def parts_in(text: str) -> set[str]:
        found = set()
        code = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
        for name in _PART.findall(code):
            found |= {f"{name}.sqlpart", *parts_in(texts[f"{name}.sqlpart"])}
        return found

    using: dict[str, set[str]] = {name: set() for name in texts}
    for name, text in texts.items():
        if name.endswith(".sql"):
            statement = name.removesuffix(".sql")
            for used in {name, *parts_in(text)}:
                using[used].add(statement)
    return {name: tuple(sorted(statements)) for name, statements in using.items()}


def sql_mutants(path: Path, shown_path: str) -> list[Mutant]:
    """Every mutant of one statement or part file; ``Mutant.sql`` holds (file name, mutated
    text, the statements it changes)."""
    text = path.read_text()
    lines = text.splitlines()
    statements = statements_using(path.parent)[path.name]
    found = [
        *(
            (n, op, what, "\n".join(changed) + "\n")
            for n, op, what, changed in _line_mutants(lines)
        ),
        *_set_mutants(text),
    ]
    return [
        Mutant(
            path=shown_path,
            line=number,
            operator=operator,
            description=description,
            function=path.stem,
            lines=range(number, number + 1),
            sql=(path.name, mutated, statements),
        )
        for number, operator, description, mutated in found
    ]
