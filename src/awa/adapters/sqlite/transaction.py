"""``RowTransaction`` inside ``BEGIN IMMEDIATE`` on the SQLite store's connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from awa.adapters._fencing import Locked, Writes, available_queues
from awa.adapters.core import JobBatch, QueueFlow
from awa.adapters.sqlite._queues import flow_of
from awa.adapters.sqlite._rows import (
    JOB_WIDTH,
    STATES,
    dump_json,
    job_from_row,
    job_params,
    micros,
    schedule_from_row,
    schedule_params,
    time_of,
    write_params,
)
from awa.adapters.sqlite._sql import SQL
from awa.domain import Job, JobState, Lease, ScheduleRecord, holds_unique_key
from awa.domain.flow import Bucket
from awa.domain.rescue import rescue_cause
from awa.ports import CallbackResolved, CancelRequested, Event, JobsAvailable

__all__ = ["SqliteTransaction"]

#: claim_candidates' statement by (per_key, aged)
_CANDIDATES = {
    (False, False): "claim_candidates",
    (False, True): "claim_candidates_aged",
    (True, False): "claim_candidates_per_key",
    (True, True): "claim_candidates_per_key_aged",
}


class SqliteTransaction:
    """``Transaction`` inside ``BEGIN IMMEDIATE``: the file's write lock is held from the
    start, so each lock is a plain read and nothing another process does can come between
    the read and the write."""

    def __init__(self, conn: sqlite3.Connection, now: datetime) -> None:
        self.conn = conn
        self._now = now
        self.events: list[Event] = []

    def now(self) -> datetime:
        return self._now

    def _locked(self, statement: str, params: dict[str, Any]) -> list[Locked]:
        rows = self.conn.execute(SQL[statement], params).fetchall()
        return [Locked(job_from_row(row), bool(row[JOB_WIDTH])) for row in rows]

    def _one(self, statement: str, params: dict[str, Any]) -> Locked | None:
        found = self._locked(statement, params)
        return found[0] if found else None

    def lock_leases(self, leases: Sequence[Lease]) -> dict[Lease, Locked]:
        pairs = dump_json([[lease.job_id, lease.run_lease] for lease in leases])
        return {
            locked.job.lease: locked for locked in self._locked("lock_leases", {"leases": pairs})
        }

    def lease_states(self, job_ids: Sequence[int]) -> dict[int, tuple[int, JobState]]:
        if not job_ids:
            return {}
        rows = self.conn.execute(SQL["lookup_leases"], {"ids": dump_json(list(job_ids))})
        return {job_id: (run_lease, STATES[state]) for job_id, run_lease, state in rows}

    def lock_job(self, job_id: int) -> Locked | None:
        return self._one("lock_job", {"id": job_id})

    def lock_dead_letter(self, job_id: int) -> Job | None:
        row = self.conn.execute(SQL["lock_dead_letter"], {"id": job_id}).fetchone()
        return None if row is None else job_from_row(row)

    def lock_dead_letters(self, queue: str | None, kind: str | None) -> list[Job]:
        rows = self.conn.execute(SQL["lock_dead_letters"], {"queue": queue, "kind": kind})
        return [job_from_row(row) for row in rows]

    def lock_callback(self, callback_id: str) -> Locked | None:
        return self._one("lock_callback", {"callback_id": callback_id})

    def callback_pending(self, callback_id: str) -> bool:
        row = self.conn.execute(SQL["callback_pending"], {"callback_id": callback_id}).fetchone()
        return bool(row[0])

    def lock_unique_holder(self, key: str) -> Locked | None:
        return self._one("lock_unique_holder", {"key": key})

    def lock_jobs(self, batch: JobBatch) -> list[Locked]:
        params = {
            **attrs.asdict(batch),
            "states": dump_json([state.value for state in batch.states]),
        }
        return self._locked("lock_jobs_matching", params)

    def lock_schedules(self, names: Sequence[str]) -> dict[str, ScheduleRecord]:
        rows = self.conn.execute(SQL["lock_schedules"], {"names": dump_json(list(names))})
        records = [schedule_from_row(row) for row in rows]
        return {record.name: record for record in records}

    def rescue_candidates(self, staleness_s: float, limit: int) -> list[Locked]:
        found: list[Locked] = []
        for locked in self._locked("live_jobs", {}):
            if len(found) == limit:
                break
            if rescue_cause(locked.job, self._now, staleness_s) is not None:
                found.append(locked)
        return found

    # -- what the core's own insert, claim and promote read ----------------------------------
    def queue_paused(self, queue: str) -> bool:
        return bool(self.conn.execute(SQL["queue_paused"], {"queue": queue}).fetchone()[0])

    # -- what a claim of a limited queue decides over (awa.adapters.core.flow) ---------------
    def queue_flow(self, queue: str) -> QueueFlow | None:
        # a plain read is the lock: BEGIN IMMEDIATE took the file's write lock, so no other
        # process's claim can count the same live attempts or take the same tokens meanwhile
        return flow_of(self.conn.execute(SQL["queue_flow"], {"queue": queue}).fetchone())

    def live_attempts(self, queue: str) -> int:
        return int(self.conn.execute(SQL["live_attempts"], {"queue": queue}).fetchone()[0])

    def keep_bucket(self, queue: str, bucket: Bucket) -> None:
        params = {"queue": queue, "tokens": bucket.tokens, "updated_at": micros(bucket.updated_at)}
        self.conn.execute(SQL["keep_bucket"], params)

    def live_by_key(self, queue: str) -> dict[str, int]:
        rows = self.conn.execute(SQL["live_by_key"], {"queue": queue})
        return {key: int(n) for key, n in rows}

    def key_buckets(self, queue: str, keys: Sequence[str]) -> dict[str, Bucket]:
        params = {"queue": queue, "keys": dump_json(list(keys))}
        rows = self.conn.execute(SQL["key_buckets"], params)
        return {key: Bucket(tokens, time_of(updated_us)) for key, tokens, updated_us in rows}

    def keep_key_buckets(self, queue: str, buckets: Mapping[str, Bucket]) -> None:
        self.conn.executemany(
            SQL["keep_key_buckets"],
            [
                {"queue": queue, "key": key, "tokens": b.tokens, "updated_at": micros(b.updated_at)}
                for key, b in buckets.items()
            ],
        )

    def keep_turn_cursor(self, queue: str, key: str | None) -> None:
        self.conn.execute(SQL["keep_turn_cursor"], {"queue": queue, "key": key})

    def claim_candidates(
        self, queue: str, limit: int, priority_aging_s: float, per_key: bool = False
    ) -> list[Job]:
        params = {"queue": queue, "now": micros(self._now), "limit": limit}
        # aged: the first few of every priority, for the domain to order; else the index's
        # order is the claim order. per_key: the same within each concurrency_key apart
        statement = _CANDIDATES[per_key, bool(priority_aging_s)]
        return [job_from_row(row) for row in self.conn.execute(SQL[statement], params)]

    def due_jobs(self, limit: int) -> list[Job]:
        rows = self.conn.execute(SQL["due_jobs"], {"now": micros(self._now), "limit": limit})
        return [job_from_row(row) for row in rows.fetchall()]

    def next_job_id(self) -> int:
        return int(self.conn.execute(SQL["next_job_id"]).fetchone()[0])

    # -- writing --------------------------------------------------------------------------------
    def insert_jobs(self, jobs: Sequence[Job]) -> None:
        self.conn.executemany(SQL["insert_job"], map(job_params, jobs))
        self._wake(jobs)

    def write_jobs(self, jobs: Sequence[Job]) -> None:
        # jobs that hold no unique key are written first: one releasing a key must not be
        # written after another taking it, or the unique index would see two holders between
        ordered = sorted(jobs, key=holds_unique_key)
        self.conn.executemany(SQL["write_job"], map(write_params, ordered))

    def _wake(self, jobs: Sequence[Job]) -> None:
        """One wake-up per queue that got available jobs (heard once committed)."""
        self.events.extend(JobsAvailable(queue) for queue in available_queues(jobs))

    def write(self, writes: Writes) -> None:
        conn = self.conn
        if writes.jobs:
            self.write_jobs(list(writes.jobs.values()))
        now = micros(self._now)
        for job_id, reason in writes.dead_letters.items():
            conn.execute(SQL["copy_to_dlq"], {"id": job_id, "reason": reason, "now": now})
            conn.execute(SQL["delete_job"], {"id": job_id})
        if writes.restored:
            for job in writes.restored:
                conn.execute(SQL["delete_dead_letter"], {"id": job.id})
            conn.executemany(SQL["insert_job"], map(job_params, writes.restored))
        if writes.schedules:
            conn.executemany(SQL["upsert_schedule"], map(schedule_params, writes.schedules))
        self.events.extend(CancelRequested(lease) for lease in writes.cancelled)
        self.events.extend(CallbackResolved(lease) for lease in writes.answered)
        self.events.extend(JobsAvailable(queue) for queue in writes.available_queues())
