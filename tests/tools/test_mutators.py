"""The mutation tool's mutators (``tools/mutate.py``) make the changes they promise.

The tool itself runs on demand, not in CI; these tests keep its mutators honest: each
operator produces a mutant that compiles and changes what it says, and nothing is mutated
where the tool promises not to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).parents[2] / "tools"
sys.path.insert(0, str(TOOLS))

from mutation.python_ops import Mutant, enum_members, python_mutants  # noqa: E402
from mutation.sql_ops import sql_mutants  # noqa: E402

SQL = Path(__file__).parents[2] / "src/awa/adapters/postgres/sql"

SOURCE = '''"""A docstring, never mutated."""
import enum

__all__ = ["TABLE", "f"]


class Colour(enum.Enum):
    RED = 1
    GREEN = 2


TABLE = {("a", Colour.RED): Colour.GREEN, ("b", Colour.GREEN): Colour.RED}


def f(x: int, *, limit: int = 3) -> bool:
    """Not mutated either."""
    if x < limit and x != 0:
        record(key=x, **OPTIONS)
    return min(x, limit) > 1  # pragma: no mutate
'''


@pytest.fixture
def mutants(tmp_path: Path) -> list[Mutant]:
    path = tmp_path / "sample.py"
    path.write_text(SOURCE)
    return python_mutants(path, "sample.py", enum_members([path]))


def _run(mutant: Mutant) -> dict[str, object]:
    namespace: dict[str, object] = {}
    assert mutant.code is not None
    exec(mutant.code, namespace)
    return namespace


def test_every_promised_operator_makes_mutants_that_compile(mutants: list[Mutant]) -> None:
    operators = {m.operator for m in mutants}
    assert {"compare", "boolop", "not", "number", "member", "keyword", "entry", "statement"} <= (
        operators
    )
    assert all(m.code is not None for m in mutants)


def test_a_table_loses_a_row_or_gets_another_member(mutants: list[Mutant]) -> None:
    dropped = [m for m in mutants if m.description == "drop entry ('a', Colour.RED)"]
    [mutant] = dropped
    namespace = _run(mutant)
    assert list(namespace["TABLE"]) == [("b", namespace["Colour"].GREEN)]  # type: ignore[attr-defined,call-overload]
    members = [m.description for m in mutants if m.operator == "member"]
    assert "Colour.RED -> GREEN" in members
    assert "Colour.GREEN -> RED" in members
    assert mutant.scope is not None, "a table runs at import: every test must be able to see it"


def test_what_is_promised_untouched_is_untouched(mutants: list[Mutant]) -> None:
    lines = {m.line for m in mutants}
    assert 1 not in lines  # the docstring
    assert 4 not in lines  # __all__
    assert 19 not in lines  # pragma: no mutate
    assert not any("docstring" in m.description or "Not mutated" in m.description for m in mutants)


def test_a_function_body_mutant_is_chosen_by_its_lines(mutants: list[Mutant]) -> None:
    [boundary] = [m for m in mutants if m.description == "< -> <="]
    assert (boundary.function, boundary.line, boundary.scope) == ("f", 17, None)
    [default] = [m for m in mutants if m.description == "3 -> 4"]
    assert default.scope == range(16, 20), "a default runs at import: the body's tests run"


def test_sql_mutants_drop_skip_locked_and_keep_set_lists_valid() -> None:
    claim = sql_mutants(SQL / "claim.sql", "claim.sql")
    [skip] = [m for m in claim if m.description == "drop SKIP LOCKED"]
    assert skip.sql is not None
    assert "FOR UPDATE OF j\n)" in skip.sql[1]
    picked = sql_mutants(SQL / "claim_picked.sqlpart", "claim_picked.sqlpart")
    [last] = [m for m in picked if m.description == "drop SET callback_result"]
    assert last.sql is not None
    assert "deadline_at = t.now + %(deadline)s::interval\nFROM picked, t" in last.sql[1]
    [first] = [m for m in picked if m.description == "drop SET state"]
    assert first.sql is not None
    assert "SET attempt = j.attempt + 1," in first.sql[1]


def test_a_part_mutant_changes_every_statement_that_includes_it() -> None:
    from awa.adapters.postgres._sql import SQL as STATEMENTS
    from awa.adapters.postgres._sql import build_statements

    [mutant] = [
        m
        for m in sql_mutants(SQL / "claim_picked.sqlpart", "claim_picked.sqlpart")
        if m.description == "drop SET heartbeat_at"
    ]
    assert mutant.sql is not None
    name, text, statements = mutant.sql
    assert statements == ("claim", "claim_aged", "claim_granted")
    texts = {p.name: p.read_text() for p in SQL.iterdir()}
    mutated = build_statements({**texts, name: text})
    changed = sorted(s for s in STATEMENTS if mutated[s] != STATEMENTS[s])
    assert changed == ["claim", "claim_aged", "claim_granted"]
    assert "heartbeat_at = t.now" not in mutated["claim"]


def test_a_sql_mutant_reaches_a_copy_of_its_statement_kept_at_import() -> None:
    """The portable insert is rendered for each driver from the text ``caller_connections``
    kept when it was imported: a mutant of it must reach that copy, not only ``SQL``."""
    from mutation.runner import _swap_in

    from awa.adapters.postgres._sql import SQL as STATEMENTS
    from awa.adapters.postgres.inserts import caller_connections

    [mutant] = sql_mutants(SQL / "insert_jobs_portable.sql", "insert_jobs_portable.sql")
    saved = dict(STATEMENTS)
    try:
        _swap_in(mutant)
        assert STATEMENTS["insert_jobs_portable"] != saved["insert_jobs_portable"]
        assert STATEMENTS["insert_jobs_portable"] == caller_connections._STATEMENT
    finally:
        STATEMENTS.update(saved)
        caller_connections._STATEMENT = saved["insert_jobs_portable"]


def test_sql_mutants_leave_comments_and_placeholders_alone() -> None:
    for mutant in sql_mutants(SQL / "rescue_candidates.sql", "rescue_candidates.sql"):
        assert mutant.sql is not None
        original = (SQL / "rescue_candidates.sql").read_text()
        comments = [line for line in original.splitlines() if line.startswith("--")]
        assert all(line in mutant.sql[1] for line in comments)
        assert mutant.sql[1].count("(") == mutant.sql[1].count(")")
        assert mutant.sql[1] != original


@pytest.mark.parametrize("only", ["src/awa/domain/backoff.py", "sql"])
def test_the_documented_list_command_names_each_mutant(only: str) -> None:
    """``python tools/mutate.py --only ... --list`` (docs/testing.md) runs nothing and names
    every mutant it would try, with the file and line it changes."""
    listed = subprocess.run(
        [sys.executable, str(TOOLS / "mutate.py"), "--only", only, "--list"],
        capture_output=True,
        text=True,
        check=True,
        cwd=TOOLS.parent,
    ).stdout.splitlines()
    *mutants, count = listed
    assert count == f"{len(mutants)} mutants"
    assert len(mutants) > 5
    prefix = only if only.endswith(".py") else "src/awa/adapters/postgres/sql/"
    assert all(line.startswith(prefix) and ": " in line for line in mutants)
    if only == "sql":
        assert any(m.endswith("drop SKIP LOCKED") and "claim.sql" in m for m in mutants)
