"""``awa.adapters.core.Transaction`` in SQL: the fenced-write loop's locks and writes, each
one statement on one cursor inside the store's ``BEGIN ... COMMIT``
(``PostgresStore._transaction``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    "CandidatesPlan",
    "PgTransaction",
    "candidates_plan",
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


@attrs.frozen
class CandidatesPlan:
    """The statement that reads a limited claim's candidates, with its parameters."""

    statement: str
    params: Mapping[str, Any]


def candidates_plan(
    limits: FlowLimits, queue: str, limit: int, priority_aging_s: float
) -> CandidatesPlan:
    """The window a claim of ``limit`` reads under ``limits``: with a key concurrency limit
    alone (no key rate, no aging), the keys whose turn can come
    (``flow_candidates_turns.sql``, which says why they are enough); with other key limits,
    up to ``limit`` of each ``concurrency_key`` and of the jobs without one
    (``flow_candidates_keyed.sql``); else up to ``limit`` in claim order
    (``flow_candidates.sql``); each ``_aged`` under priority aging."""
    params: dict[str, Any] = {"queue": queue, "limit": limit}
    if limits.key_concurrency_limit and not (limits.key_rate_limit or priority_aging_s):
        return CandidatesPlan("flow_candidates_turns", params)
    statement = "flow_candidates_keyed" if limits.has_key_limits else "flow_candidates"
    if priority_aging_s:
        statement += "_aged"
        if not limits.has_key_limits:  # the keyed window is ranked by the store
            params["aging_us"] = round(priority_aging_s * 1e6)
    return CandidatesPlan(statement, params)


def lease_states(cur: Cursor, job_ids: Sequence[int]) -> dict[int, tuple[int, JobState]]:
    if not job_ids:
        return {}
    rows = cur.execute(SQL["lookup_leases"], {"ids": list(job_ids)}).fetchall()
    return {job_id: (run_lease, _STATES[state]) for job_id, run_lease, state in rows}


class PgTransaction:
    """``Transaction`` on one cursor inside ``BEGIN ... COMMIT``: each lock is one statement
    (``SELECT ... FOR UPDATE``), and ``write`` is at most one statement per kind of change."""

    def __init__(
        self,
        cur: Cursor,
        injected_now: datetime | None,
        *,
        skip_held: bool = False,
        pipeline: psycopg.Pipeline | None = None,
    ) -> None:
        """``pipeline``: the connection is in pipeline mode (a limited claim's), where a
        statement's answer comes once the pipeline is synced (``_answered``)."""
        self.cur = cur
        self._pipeline = pipeline
        self._injected_now = injected_now
        self._now: datetime | None = injected_now
        self._skip_held = skip_held
        self._locked_leases: set[Lease] = set()  # what lock_leases locked
        self._looked_up: dict[int, tuple[int, JobState]] = {}  # what lease_states found
        # a limited queue's live attempts, as counted after its row lock (flow_candidates.sql)
        self._live: dict[str, int] = {}
        self._live_keys: dict[str, dict[str, int]] = {}  # likewise by key (turn_candidates)
        self._kept_buckets: dict[str, Bucket] = {}  # written by claim_granted
        self._kept_key_buckets: dict[str, dict[str, Bucket]] = {}  # likewise, per key
        self._kept_turns: dict[str, str | None] = {}  # likewise, the turn cursor
        self._ahead: tuple[CandidatesPlan, Cursor] | None = None  # send_ahead's statement

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
    def queue_flow(self, queue: str, ahead: CandidatesPlan | None = None) -> QueueFlow | None:
        """``lock_queue_flow.sql``: the queue's row locked until COMMIT, when it has a limit
        and is not paused; ``None`` otherwise (nothing locked). ``ahead``, on a connection in
        pipeline mode: the candidates statement the claim expects to need, queued behind the
        lock on a cursor of its own, so that it runs once the lock is granted (counting after
        the lock, as ``candidates`` must) and both answers come back in one round trip;
        ``candidates`` takes its rows when the queue's limits call for the same plan."""
        self.cur.execute(SQL["lock_queue_flow"], {"queue": queue})
        if ahead is not None:
            cur = self.cur.connection.cursor()
            cur.execute(SQL[ahead.statement], {"now": self._injected_now, **ahead.params})
            self._ahead = (ahead, cur)
        row = self.cur.fetchone()
        if row is None:
            self._drop_ahead()
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

    def _answered(self, cur: Cursor) -> Cursor:
        """``cur``, with its statement's answer read: a fetch would sync the pipeline
        itself, but the columns are checked before it (``checked_rows``)."""
        if cur.pgresult is None and self._pipeline is not None:
            self._pipeline.sync()
        return cur

    def _drop_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead[1].close()  # its rows stay locked until COMMIT, none granted
            self._ahead = None

    def candidates(self, queue: str, plan: CandidatesPlan) -> tuple[list[Job], int]:
        """Runnable jobs of ``queue`` passed by the ordering filter, locked, with its live
        attempts counted in the same statement: call it once ``queue_flow`` holds the queue's
        row. ``plan`` says which statement reads them (``candidates_plan``). With them, how
        many of the keys the turn window walked have a job that can run now and are at their
        limit (0 for the other windows); the live attempts by key are kept for
        ``live_by_key``."""
        if self._ahead is not None and self._ahead[0] == plan:
            cur = self._ahead[1]
            self._ahead = None
        else:  # the queue's limits changed since the guess: this window, in a round trip more
            self._drop_ahead()
            cur = self.cur
            cur.execute(SQL[plan.statement], {"now": self._injected_now, **plan.params})
        turns = plan.statement == "flow_candidates_turns"
        prefix = FLOW_PREFIX + 3 if turns else FLOW_PREFIX
        rows = checked_rows(self._answered(cur), prefix)
        if cur is not self.cur:
            cur.close()
        if rows and self._now is None:
            self._now = utc(rows[0][0])
        if not turns:
            if rows:
                self._live[queue] = int(rows[0][1])
            return [job_from_row(row, prefix) for row in rows], 0
        first = rows[0]  # one row at least (the NULL job when none)
        self._live[queue] = int(first[1])
        self._live_keys[queue] = dict(zip(first[3] or (), map(int, first[4] or ()), strict=True))
        jobs = [job_from_row(row, prefix) for row in rows if row[prefix] is not None]
        return jobs, int(first[2] or 0)

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
        """``count_live_by_key.sql``, after the queue's row lock (``queue_flow``), unless
        ``turn_candidates`` counted them in its statement."""
        if queue in self._live_keys:
            return self._live_keys[queue]
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
        """Row 3 for ``jobs`` (locked by ``candidates``), and what ``keep_bucket``,
        ``keep_key_buckets`` and ``keep_turn_cursor`` kept for ``queue`` written, in one
        statement (``claim_granted.sql``)."""
        return self.send_claim_granted(queue, jobs, deadline)()

    def send_claim_granted(
        self, queue: str, jobs: Sequence[Job], deadline: timedelta | None
    ) -> Callable[[], list[Job]]:
        """``claim_granted``, sent on a cursor of its own, its jobs read by the function it
        returns: in pipeline mode, once COMMIT is queued behind it (one round trip for both)."""
        bucket = self._kept_buckets.pop(queue, None)
        key_buckets = self._kept_key_buckets.pop(queue, {})
        turn = self._kept_turns.pop(queue, _NO_TURN)
        if not jobs:  # a bucket nothing took from was only refilled: the next claim refills
            return list  # the stored one the same way, so it need not be written (nor does a
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
        cur = self.cur.connection.cursor()
        cur.execute(SQL["claim_granted"], params)

        def claimed() -> list[Job]:
            with cur:
                return [job_from_row(row) for row in checked_rows(self._answered(cur))]

        return claimed

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
