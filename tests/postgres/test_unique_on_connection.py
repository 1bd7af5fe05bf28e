"""Unique inserts inside the caller's transaction: a conflict costs the insert, not the
caller's transaction (it runs in a savepoint), and the caller's own uncommitted jobs count."""

from __future__ import annotations

import psycopg
import pytest

from awa.adapters.postgres import PostgresStore, insert_jobs
from awa.domain import NewJob, Unique, UniqueConflict

JOB = NewJob(kind="report", args={"day": 7}, unique=Unique())


def test_a_conflict_inside_the_callers_transaction_leaves_it_usable(
    pg_clean_url: str,
) -> None:
    with PostgresStore(pg_clean_url, pool_size=1) as store:
        [holder] = store.insert([JOB])
        with psycopg.connect(pg_clean_url) as conn:  # a transaction of the caller's
            [mine] = insert_jobs(conn, [NewJob(kind="mail")])
            with pytest.raises(UniqueConflict) as raised:
                insert_jobs(conn, [JOB])
            assert raised.value.job_id == holder.id
            [skipped] = insert_jobs(conn, [JOB], on_conflict="skip")
            assert skipped.id == holder.id
            conn.execute("SELECT 1")  # the transaction goes on
        assert {j.id for j in store.list_jobs()} == {holder.id, mine.id}  # committed


def test_an_uncommitted_job_of_the_same_transaction_holds_its_key(pg_clean_url: str) -> None:
    with psycopg.connect(pg_clean_url) as conn:
        [first] = insert_jobs(conn, [JOB])
        with pytest.raises(UniqueConflict) as raised:
            insert_jobs(conn, [JOB])
        assert raised.value.job_id == first.id
        conn.rollback()
    with PostgresStore(pg_clean_url, pool_size=1) as store:
        assert store.list_jobs() == []
