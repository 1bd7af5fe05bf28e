"""PostgreSQL passes the same behavioural contract as every other ``ClaimStore``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.ports import ClaimStore
from awa.testing.contract import ClaimStoreContract, Plant


class TestPostgresContract(ClaimStoreContract):
    @pytest.fixture
    def store(  # type: ignore[override]
        self, make_store: Callable[..., PostgresStore], clock: ManualClock
    ) -> ClaimStore:
        return make_store(clock)

    @pytest.fixture
    def plant_unreadable(self, pg_pool: ConnectionPool[Any]) -> Plant:
        """Writes what no reader takes straight into the tables, as a hand or a bug would."""

        def plant(job_id: int, column: str, *, too_late: bool = False) -> None:
            value = _UNREADABLE.get(column, _LATE if too_late else _EARLY)
            with pg_pool.connection() as conn:
                for table in ("awa.jobs", "awa.dlq"):
                    conn.execute(
                        sql.SQL("UPDATE {} SET {} = {} WHERE id = %s").format(
                            sql.SQL(table), sql.Identifier(column), sql.SQL(value)
                        ),
                        (job_id,),
                    )

        return plant


# times PostgreSQL keeps and Python cannot hold; JSON with an integer Python will not read
_EARLY = "'0001-12-31 10:00:00+00 BC'::timestamptz"
_LATE = "'10000-01-01 13:00:00+00'::timestamptz"
_HUGE_JSON = "('{\"n\": ' || repeat('9', 5000) || '}')::jsonb"
_UNREADABLE = {
    "args": _HUGE_JSON,
    "metadata": _HUGE_JSON,
    "errors": '\'[{"error": "no attempt or time"}]\'::jsonb',
}
