"""``PostgresStore``'s primitives for operators (``awa job``, ``awa queue``, ``awa dlq``, the
dashboard): jobs read, listed and counted, queues paused, configured and counted, the
dead-letter queue read and purged. Each is one statement; ``StoreCore`` checks the arguments and
holds every decision.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.rows import TupleRow

from awa.adapters._summaries import list_params
from awa.adapters.core import JobQuery, SettingsChange
from awa.adapters.postgres import summaries
from awa.adapters.postgres._rereading import fetch_rows
from awa.adapters.postgres._rows import (
    checked_rows,
    dlq_entry_from_row,
    job_from_row,
    read_time,
    settings_from_row,
)
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.transaction import PgTransaction
from awa.domain import DlqEntry, Job, JobState
from awa.domain.flow import RateLimit
from awa.ports import QueueSettings, QueueStats
from awa.ports.listing import Home, JobSummary
from awa.ports.unchanged import UNCHANGED, Unchanged

__all__ = ["PostgresOperators"]

Cursor = psycopg.Cursor[TupleRow]


class PostgresOperators:
    """Mixed into ``PostgresStore``, whose statements and transactions these run in."""

    if TYPE_CHECKING:

        def _statement(self, action: str) -> AbstractContextManager[Cursor]: ...

        def _transaction(self, action: str) -> AbstractContextManager[PgTransaction]: ...

    # -- jobs and queues -------------------------------------------------------------------------
    def _get_job(self, job_id: int) -> Job | None:
        with self._statement("reading a job") as cur:
            cur.execute(SQL["get_job"], {"id": job_id})
            rows = checked_rows(cur)
        return job_from_row(rows[0]) if rows else None

    def _list_jobs(self, query: JobQuery) -> list[Job]:
        with self._statement("listing jobs") as cur:
            cur.execute(SQL["list_jobs"], list_params(query))
            return [job_from_row(row) for row in checked_rows(cur)]

    def _list_job_summaries(
        self, query: JobQuery, home: Home, error_chars: int
    ) -> list[JobSummary]:
        with self._statement("listing jobs") as cur:
            cur.execute(
                SQL[summaries.STATEMENTS[home]], summaries.summary_params(query, error_chars)
            )
            return summaries.summaries_of(cur)

    def _discard_failed(self, queue: str | None, kind: str | None) -> int:
        with self._statement("discarding failed jobs") as cur:
            cur.execute(SQL["discard_failed"], {"queue": queue, "kind": kind})
            return cur.rowcount

    def _count_jobs(self, state: JobState | None, kind: str | None, queue: str | None) -> int:
        params = {"state": state.value if state is not None else None, "kind": kind, "queue": queue}
        with self._statement("counting jobs") as cur:
            row = cur.execute(SQL["count_jobs"], params).fetchone()
        return int(row[0]) if row is not None else 0

    def _set_queue_paused(self, queue: str, paused: bool) -> None:
        with self._transaction("resuming a queue" if not paused else "pausing a queue") as tx:
            tx.cur.execute(SQL["set_queue_paused"], {"queue": queue, "paused": paused})
            if not paused:
                tx.cur.execute(SQL["notify_wakeup"], {"queues": [queue]})

    def _configure_queue(self, queue: str, change: SettingsChange) -> QueueSettings:
        params = {
            "queue": queue,
            "dlq_enabled": change.dlq_enabled,
            "finished_retention": _seconds(change.finished_retention_s),
            "dlq_retention": _seconds(change.dlq_retention_s),
            "failed_retention": _seconds(change.failed_retention_s),
            **_flow_params(change),
        }
        with self._transaction("configuring a queue") as tx:
            row = tx.cur.execute(SQL["configure_queue"], params).fetchone()
            if params["key_rate_given"]:  # after the queue's row lock: clear_key_buckets.sql
                tx.cur.execute(SQL["clear_key_buckets"], {"queue": queue})
        assert row is not None  # an upsert always returns its row
        return settings_from_row(row)

    def queue_stats(self) -> list[QueueStats]:
        with self._statement("reading queue statistics") as cur:
            rows = fetch_rows(cur.execute(SQL["queue_stats"]))
        stats = []
        for queue, by_state, dlq_depth, *settings in rows:
            paused, dlq_enabled, oldest, finished_s, dlq_s, failed_s, *flow = settings
            stored = settings_from_row(
                (queue, paused, dlq_enabled, finished_s, dlq_s, failed_s, *flow)
            )
            counts = {state: by_state.get(state.value, 0) for state in JobState}
            stats.append(QueueStats.of(stored, counts, dlq_depth, read_time(oldest)))
        return stats

    # -- the dead-letter queue ------------------------------------------------------------------
    def _list_dlq(
        self, queue: str | None, kind: str | None, limit: int, before_id: int | None
    ) -> list[DlqEntry]:
        params = {"queue": queue, "kind": kind, "limit": limit, "before_id": before_id}
        with self._statement("listing the dead-letter queue") as cur:
            cur.execute(SQL["list_dlq"], params)
            return [dlq_entry_from_row(row) for row in checked_rows(cur)]

    def _get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        with self._statement("reading a dead-letter entry") as cur:
            cur.execute(SQL["get_dlq_entry"], {"id": job_id})
            rows = checked_rows(cur)
        return dlq_entry_from_row(rows[0]) if rows else None

    def _purge_dlq(self, queue: str | None, kind: str | None) -> int:
        with self._statement("purging the dead-letter queue") as cur:
            cur.execute(SQL["purge_dlq"], {"queue": queue, "kind": kind})
            return cur.rowcount

    def _purge_dlq_job(self, job_id: int) -> bool:
        with self._statement("purging a dead-letter entry") as cur:
            cur.execute(SQL["purge_dlq_job"], {"id": job_id})
            return cur.rowcount > 0


def _flow_params(change: SettingsChange) -> dict[str, Any]:
    """The flow limits of ``configure_queue.sql``: each with a flag saying whether it is given
    (``UNCHANGED``: not given; ``None``: removed)."""
    return {
        **_limit_params("", change.concurrency_limit, change.rate_limit),
        **_limit_params("key_", change.key_concurrency_limit, change.key_rate_limit),
    }


def _limit_params(
    prefix: str, concurrency: int | Unchanged | None, rate: RateLimit | Unchanged | None
) -> dict[str, Any]:
    given_rate = rate if isinstance(rate, RateLimit) else None
    return {
        f"{prefix}concurrency_given": concurrency is not UNCHANGED,
        f"{prefix}concurrency_limit": None if concurrency is UNCHANGED else concurrency,
        f"{prefix}rate_given": rate is not UNCHANGED,
        f"{prefix}rate_per_second": None if given_rate is None else given_rate.per_second,
        f"{prefix}rate_burst": None if given_rate is None else given_rate.burst,
    }


def _seconds(seconds: float | None) -> timedelta | None:
    return None if seconds is None else timedelta(seconds=seconds)
