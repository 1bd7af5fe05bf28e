"""``awa.adapters.core.Transaction`` in SQL: the fenced-write loop's locks and writes, each
one statement on one cursor inside the store's ``BEGIN ... COMMIT``
(``PostgresStore._transaction``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
from psycopg.rows import TupleRow

from awa.adapters._fencing import Locked, Writes, available_queues
from awa.adapters.core import JobBatch, QueueFlow
from awa.adapters.postgres._rows import (
    checked_rows,
    job_from_row,
    rate_of,
    restore_params,
    schedule_from_row,
    schedule_params,
    utc,
    write_params,
)
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.held_rows import held_requests
from awa.domain import Job, JobState, Lease, ScheduleRecord
from awa.domain.flow import Bucket, FlowLimits

__all__ = [
    "DLQ_PREFIX",
    "FLOW_PREFIX",
    "LEASE_PREFIX",
    "LOCK_PREFIX",
    "PgTransaction",
    "lease_states",
]

Cursor = psycopg.Cursor[TupleRow]
# the columns before the job in lock_leases.sql rows: now, requested_lease, dlq_enabled
LEASE_PREFIX = 3
# ... in lock_job.sql, lock_callback.sql and rescue_candidates.sql rows: now, dlq_enabled
LOCK_PREFIX = 2
# ... in take_from_dlq.sql, lock_dlq_matching.sql, lock_schedules.sql and
# upcoming_schedules.sql rows: now
DLQ_PREFIX = 1
# ... in flow_candidates.sql rows (and its aged and keyed forms'): now, live attempts
FLOW_PREFIX = 2
_NO_TURN = object()  # keep_turn_cursor not called: the cursor stays as it is
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
        # a limited queue's live attempts, as counted after its row lock (flow_candidates.sql)
        self._live: dict[str, int] = {}
        self._kept_buckets: dict[str, Bucket] = {}  # written by claim_granted
        self._kept_key_buckets: dict[str, dict[str, Bucket]] = {}  # likewise, per key
        self._kept_turns: dict[str, str | None] = {}  # likewise, the turn cursor

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

    # -- a claim of a limited queue (``awa.adapters.core.FlowTransaction``) ----------------------
    def queue_flow(self, queue: str) -> QueueFlow | None:
        """``lock_queue_flow.sql``: the queue's row locked until COMMIT, when it has a limit
        and is not paused; ``None`` otherwise (nothing locked)."""
        row = self.cur.execute(SQL["lock_queue_flow"], {"queue": queue}).fetchone()
        if row is None:
            return None
        (
            concurrency, per_second, burst, tokens, updated_at, key_concurrency,
            key_per_second, key_burst, turn_cursor, turn_taken,
        ) = row  # fmt: skip
        limits = FlowLimits(
            concurrency_limit=concurrency,
            rate_limit=rate_of(per_second, burst),
            key_concurrency_limit=key_concurrency,
            key_rate_limit=rate_of(key_per_second, key_burst),
        )
        bucket = None if tokens is None else Bucket(tokens, utc(updated_at))
        return QueueFlow(limits, bucket, turn_cursor, turn_taken)

    def flow_candidates(
        self, queue: str, limit: int, priority_aging_s: float, per_key: bool = False
    ) -> list[Job]:
        """Runnable jobs of ``queue`` passed by the ordering filter, locked, with its live
        attempts counted in the same statement: call it once ``queue_flow`` holds the queue's
        row. Up to ``limit`` in the claim's order (``flow_candidates.sql``); with ``per_key``,
        the keyed window, up to ``limit`` of each ``concurrency_key`` and of the jobs without
        one (``flow_candidates_keyed.sql``), in any order."""
        params: dict[str, Any] = {"queue": queue, "limit": limit}
        statement = "flow_candidates_keyed" if per_key else "flow_candidates"
        if priority_aging_s:
            statement += "_aged"
            if not per_key:  # the keyed window is ranked by the store
                params["aging_us"] = round(priority_aging_s * 1e6)
        rows = self._rows(statement, params, FLOW_PREFIX)
        if rows:
            self._live[queue] = int(rows[0][1])
        return [job_from_row(row, FLOW_PREFIX) for row in rows]

    def turn_candidates(self, queue: str, limit: int, flow: QueueFlow) -> tuple[list[Job], int]:
        """The keyed window of just the keys whose turn can come in a claim of ``limit``
        (``flow_candidates_turns.sql``, which says why they are enough), for a queue with a
        ``key_concurrency_limit``, no ``key_rate_limit`` and no priority aging; as
        ``flow_candidates``, after ``queue_flow``. With it, how many keys with a job that can
        run now are at their limit."""
        params: dict[str, Any] = {
            "queue": queue,
            "limit": limit,
            "cap": flow.limits.key_concurrency_limit,
            "cursor": flow.turn_cursor,
            "taken": flow.turn_taken,
        }
        rows = self._rows("flow_candidates_turns", params, FLOW_PREFIX + 1)
        self._live[queue] = int(rows[0][1])  # one row at least (the NULL job when none)
        jobs = [
            job_from_row(row, FLOW_PREFIX + 1) for row in rows if row[FLOW_PREFIX + 1] is not None
        ]
        return jobs, int(rows[0][2])

    def live_attempts(self, queue: str) -> int:
        if queue not in self._live:
            row = self.cur.execute(SQL["count_live_attempts"], {"queue": queue}).fetchone()
            assert row is not None
            self._live[queue] = int(row[0])
        return self._live[queue]

    def keep_bucket(self, queue: str, bucket: Bucket) -> None:
        """Kept until ``claim_granted``, which writes it in its own statement."""
        self._kept_buckets[queue] = bucket

    def live_by_key(self, queue: str) -> dict[str, int]:
        """``count_live_by_key.sql``, after the queue's row lock (``queue_flow``)."""
        rows = self.cur.execute(SQL["count_live_by_key"], {"queue": queue}).fetchall()
        return {key: int(n) for key, n in rows}

    def key_buckets(self, queue: str, keys: Sequence[str]) -> dict[str, Bucket]:
        """``key_buckets.sql``: one statement for every key of the claim's candidates."""
        params = {"queue": queue, "keys": list(keys)}
        rows = self.cur.execute(SQL["key_buckets"], params).fetchall()
        return {key: Bucket(tokens, utc(updated_at)) for key, tokens, updated_at in rows}

    def keep_key_buckets(self, queue: str, buckets: Mapping[str, Bucket]) -> None:
        """Kept until ``claim_granted``, which writes them with the granted jobs."""
        self._kept_key_buckets.setdefault(queue, {}).update(buckets)

    def keep_turn_cursor(self, queue: str, key: str | None) -> None:
        """Kept until ``claim_granted``, which writes it with the granted jobs."""
        self._kept_turns[queue] = key

    def claim_granted(
        self, queue: str, jobs: Sequence[Job], deadline: timedelta | None
    ) -> list[Job]:
        """Row 3 for ``jobs`` (locked by ``flow_candidates``), and what ``keep_bucket``,
        ``keep_key_buckets`` and ``keep_turn_cursor`` kept for ``queue`` written, in one
        statement (``claim_granted.sql``)."""
        bucket = self._kept_buckets.pop(queue, None)
        key_buckets = self._kept_key_buckets.pop(queue, {})
        turn = self._kept_turns.pop(queue, _NO_TURN)
        if not jobs:  # a bucket nothing took from was only refilled: the next claim refills
            return []  # the stored one the same way, so it need not be written (nor does a
            # cursor move without a grant: awa.domain.flow_claims)
        params = {
            "now": self.now(),
            "ids": [job.id for job in jobs],
            "deadline": deadline,
            "queue": queue,
            "tokens": None if bucket is None else bucket.tokens,
            "bucket_at": None if bucket is None else bucket.updated_at,
            "key_names": list(key_buckets),
            "key_tokens": [b.tokens for b in key_buckets.values()],
            "key_ats": [b.updated_at for b in key_buckets.values()],
            "turn_given": turn is not _NO_TURN,
            "turn_cursor": None if turn is _NO_TURN else turn,
        }
        self.cur.execute(SQL["claim_granted"], params)
        return [job_from_row(row) for row in checked_rows(self.cur)]

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
