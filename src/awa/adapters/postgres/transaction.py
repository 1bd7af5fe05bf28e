"""``awa.adapters.core.Transaction`` in SQL: the fenced-write loop's locks and writes, each
one statement on one cursor inside the store's ``BEGIN ... COMMIT``
(``PostgresStore._transaction``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
from psycopg.rows import TupleRow

from awa.adapters._fencing import Locked, Writes, available_queues
from awa.adapters.core import JobBatch
from awa.adapters.postgres._rows import (
    checked_rows,
    job_from_row,
    restore_params,
    schedule_from_row,
    schedule_params,
    utc,
    write_params,
)
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.held_rows import held_requests
from awa.domain import Job, JobState, Lease, ScheduleRecord

__all__ = ["DLQ_PREFIX", "LEASE_PREFIX", "LOCK_PREFIX", "PgTransaction", "lease_states"]

Cursor = psycopg.Cursor[TupleRow]
# the columns before the job in lock_leases.sql rows: now, requested_lease, dlq_enabled
LEASE_PREFIX = 3
# ... in lock_job.sql, lock_callback.sql and rescue_candidates.sql rows: now, dlq_enabled
LOCK_PREFIX = 2
# ... in take_from_dlq.sql, lock_dlq_matching.sql, lock_schedules.sql and
# upcoming_schedules.sql rows: now
DLQ_PREFIX = 1
_STATES = {state.value: state for state in JobState}


def lease_states(cur: Cursor, job_ids: Sequence[int]) -> dict[int, tuple[int, JobState]]:
    if not job_ids:
        return {}
    rows = cur.execute(SQL["lookup_leases"], {"ids": list(job_ids)}).fetchall()
    return {job_id: (run_lease, _STATES[state]) for job_id, run_lease, state in rows}


class PgTransaction:
    """``Transaction`` on one cursor inside ``BEGIN ... COMMIT``: each lock is one statement
    (``SELECT ... FOR UPDATE``), and ``write`` is at most one statement per kind of change."""

    def __init__(
        self, cur: Cursor, injected_now: datetime | None, *, skip_held: bool = False
    ) -> None:
        self.cur = cur
        self._injected_now = injected_now
        self._now: datetime | None = injected_now
        self._skip_held = skip_held
        self._locked_leases: set[Lease] = set()  # what lock_leases locked
        self._looked_up: dict[int, tuple[int, JobState]] = {}  # what lease_states found

    def now(self) -> datetime:
        if self._now is None:  # nothing read the time yet: ask the database's clock
            row = self.cur.execute(SQL["transaction_now"], {"now": None}).fetchone()
            assert row is not None
            self._now = utc(row[0])
        return self._now

    def _rows(self, statement: str, params: dict[str, Any], prefix: int) -> list[Any]:
        """Run a locking statement whose rows start with ``now``; remember that time."""
        self.cur.execute(SQL[statement], {"now": self._injected_now, **params})
        rows = checked_rows(self.cur, prefix)
        if rows and self._now is None:
            self._now = utc(rows[0][0])
        return rows

    def _locked(self, statement: str, params: dict[str, Any]) -> list[Locked]:
        rows = self._rows(statement, params, LOCK_PREFIX)
        return [Locked(job_from_row(row, LOCK_PREFIX), row[1]) for row in rows]

    def lock_leases(self, leases: Sequence[Lease]) -> dict[Lease, Locked]:
        params = {
            "ids": [lease.job_id for lease in leases],
            "leases": [lease.run_lease for lease in leases],
        }
        statement = "lock_free_leases" if self._skip_held else "lock_leases"
        rows = self._rows(statement, params, LEASE_PREFIX)
        locked = {
            Lease(row[LEASE_PREFIX], row[1]): Locked(job_from_row(row, LEASE_PREFIX), row[2])
            for row in rows
        }
        self._locked_leases.update(locked)
        return locked

    def lease_states(self, job_ids: Sequence[int]) -> dict[int, tuple[int, JobState]]:
        states = lease_states(self.cur, job_ids)
        self._looked_up.update(states)
        return states

    def held_requests(self, leases: Sequence[Lease]) -> list[int]:
        """Indexes of ``leases`` whose rows ``lock_leases`` may have skipped as held: not
        locked, and their job's committed lease is still the requested one."""
        locked = [lease in self._locked_leases for lease in leases]
        return held_requests(leases, locked, self._looked_up)

    def lock_job(self, job_id: int) -> Locked | None:
        found = self._locked("lock_job", {"id": job_id})
        if not found:
            # A job that changed home while this statement waited for it was deleted and
            # inserted anew (write_jobs.sql); this statement's snapshot saw only the deletion.
            # The next statement's sees the job where it went.
            found = self._locked("lock_job", {"id": job_id})
        return found[0] if found else None

    def lock_dead_letter(self, job_id: int) -> Job | None:
        rows = self._rows("take_from_dlq", {"id": job_id}, DLQ_PREFIX)
        return job_from_row(rows[0], DLQ_PREFIX) if rows else None

    def lock_dead_letters(self, queue: str | None, kind: str | None) -> list[Job]:
        rows = self._rows("lock_dlq_matching", {"queue": queue, "kind": kind}, DLQ_PREFIX)
        return [job_from_row(row, DLQ_PREFIX) for row in rows]

    def lock_callback(self, callback_id: str) -> Locked | None:
        found = self._locked("lock_callback", {"callback_id": callback_id})
        return found[0] if found else None

    def callback_pending(self, callback_id: str) -> bool:
        row = self.cur.execute(SQL["callback_pending"], {"callback_id": callback_id}).fetchone()
        return bool(row and row[0])

    def lock_unique_holder(self, key: str) -> Locked | None:
        found = self._locked("lock_unique_holder", {"key": key})
        return found[0] if found else None

    def lock_jobs(self, batch: JobBatch) -> list[Locked]:
        params = {**attrs.asdict(batch), "states": [state.value for state in batch.states]}
        return self._locked("lock_jobs_matching", params)

    def lock_schedules(self, names: Sequence[str]) -> dict[str, ScheduleRecord]:
        params = {"now": self._injected_now, "names": list(names)}
        rows = self.cur.execute(SQL["lock_schedules"], params).fetchall()
        if rows and self._now is None:
            self._now = utc(rows[0][0])
        records = [schedule_from_row(row, DLQ_PREFIX) for row in rows]
        return {record.name: record for record in records}

    def rescue_candidates(self, staleness_s: float, limit: int) -> list[Locked]:
        params = {"staleness": timedelta(seconds=staleness_s), "limit": limit}
        return self._locked("rescue_candidates", params)

    def write(self, writes: Writes) -> None:
        cur = self.cur
        if writes.jobs:
            cur.execute(SQL["write_jobs"], write_params(list(writes.jobs.values())))
        if writes.dead_letters:
            params = {
                "now": self.now(),
                "ids": list(writes.dead_letters),
                "reasons": list(writes.dead_letters.values()),
            }
            cur.execute(SQL["move_to_dlq"], params)
        if writes.restored:
            cur.execute(SQL["delete_from_dlq"], {"ids": [job.id for job in writes.restored]})
            cur.execute(SQL["restore_jobs"], restore_params(writes.restored))
        if writes.schedules:
            cur.execute(SQL["upsert_schedules"], schedule_params(writes.schedules))
        for lease in writes.cancelled:
            cur.execute(SQL["notify_cancel"], {"id": lease.job_id, "run_lease": lease.run_lease})
        for lease in writes.answered:
            params = {"id": lease.job_id, "run_lease": lease.run_lease}
            cur.execute(SQL["notify_callback"], params)
        woken = writes.available_queues()
        if woken:
            cur.execute(SQL["notify_wakeup"], {"queues": woken})

    def wake(self, jobs: Sequence[Job]) -> None:
        """One wake-up per queue that got available jobs (sent on commit)."""
        woken = available_queues(jobs)
        if woken:
            self.cur.execute(SQL["notify_wakeup"], {"queues": woken})
