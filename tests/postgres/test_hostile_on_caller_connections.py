"""The hostile-input law on the connections applications hold: every hostile job is refused
with nothing written, or committed in the caller's transaction and read back whole, on each
driver awa inserts through (psycopg, SQLAlchemy, Django, asyncpg), as it is on the store's own
connections (``awa.testing.contract.hostile``).

A refused job must raise before any SQL runs on the caller's connection: a row the insert
wrote before it failed would be kept by the application's own commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awa.adapters.postgres import PostgresStore
from awa.domain import Job, JobState, NewJob, ValidationError
from awa.testing.contract.hostile import assert_read_back_whole
from awa.testing.strategies_hostile import JOB_FIELDS, hostile_job_fields
from tests.postgres.test_caller_connections import _as_url, _configure_django, _sqlalchemy_url

#: an insert on the caller's connection, in a transaction the caller then commits
Insert = Callable[[PostgresStore, NewJob], list[Job]]


@pytest.fixture(scope="module")
def drivers(pg_url: str) -> Iterator[dict[str, Insert]]:
    """One open connection per driver for the whole module (a connection per example would
    spend the test's time connecting)."""
    import asyncpg
    import sqlalchemy

    conn = psycopg.connect(pg_url)
    engine = sqlalchemy.create_engine(_sqlalchemy_url(pg_url, "psycopg"))
    loop = asyncio.new_event_loop()
    raw = loop.run_until_complete(asyncpg.connect(_as_url(pg_url)))
    _configure_django(pg_url)
    from django.db import connection as django_connection
    from django.db import transaction

    def on_psycopg(store: PostgresStore, job: NewJob) -> list[Job]:
        with conn.transaction():
            return store.insert_on(conn, [job])

    def on_sqlalchemy(store: PostgresStore, job: NewJob) -> list[Job]:
        with engine.begin() as connection:
            return store.insert_on(connection, [job])

    def on_django(store: PostgresStore, job: NewJob) -> list[Job]:
        with transaction.atomic():
            return store.insert_on(django_connection, [job])

    async def asyncpg_insert(store: PostgresStore, job: NewJob) -> list[Job]:
        async with raw.transaction():
            return await store.insert_on_async(raw, [job])

    def on_asyncpg(store: PostgresStore, job: NewJob) -> list[Job]:
        return loop.run_until_complete(asyncpg_insert(store, job))

    yield {
        "psycopg": on_psycopg,
        "sqlalchemy": on_sqlalchemy,
        "django": on_django,
        "asyncpg": on_asyncpg,
    }
    loop.run_until_complete(raw.close())
    loop.close()
    engine.dispose()
    conn.close()
    django_connection.close()


@pytest.mark.parametrize("hostile", list(JOB_FIELDS))
@pytest.mark.parametrize("driver", ["psycopg", "sqlalchemy", "django", "asyncpg"])
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_hostile_job_on_a_callers_connection_is_refused_or_read_back_whole(
    store: PostgresStore, drivers: dict[str, Insert], driver: str, hostile: str, data: st.DataObject
) -> None:
    fields = data.draw(hostile_job_fields(hostile), label="fields")
    try:
        job = NewJob(**fields)
    except ValidationError:
        return  # refused before any connection is touched
    before = store.count_jobs()
    try:
        [inserted] = drivers[driver](store, job)
    except ValidationError:
        assert store.count_jobs() == before, "a refused insert left a row to commit"
        return
    assert_read_back_whole(inserted, fields, job)
    assert_read_back_whole(store.get_job(inserted.id), fields, job)
    assert store.cancel(inserted.id).state is JobState.CANCELLED
