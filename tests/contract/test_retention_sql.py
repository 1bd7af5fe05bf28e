"""Every store's retention deletes take exactly the states ``awa.domain.retention`` gives
each retention: the rule is the domain's, the SQL only spells it out (a partial index is used
only for a literal state list, so the list cannot be a bound parameter)."""

from __future__ import annotations

import re

import pytest

from awa.adapters.postgres._sql import SQL as POSTGRES_SQL
from awa.adapters.sqlite._sql import SQL as SQLITE_SQL
from awa.domain import JobState
from awa.domain.retention import Retention, retained_states

_STATE_TERM = re.compile(r"j\.state (?:= '(\w+)'|IN \(([^)]*)\))")


@pytest.mark.parametrize("sql", [POSTGRES_SQL, SQLITE_SQL], ids=["postgres", "sqlite"])
@pytest.mark.parametrize("retention", list(Retention))
def test_each_stores_delete_statement_takes_exactly_the_states_of_its_retention(
    sql: dict[str, str], retention: Retention
) -> None:
    statement = sql[f"delete_{retention.name.lower()}"]
    body = "\n".join(line for line in statement.splitlines() if not line.startswith("--"))
    terms = _STATE_TERM.findall(body)
    assert terms, "the statement names no state"
    for single, listed in terms:
        states = [single] if single else re.findall(r"'(\w+)'", listed)
        assert tuple(JobState(s) for s in states) == retained_states(retention)
