"""The in-memory claim store: a real adapter for tests and simulation.

The lifecycle (argument checks, the fenced-write loop, every decision, and insert, claim and
promote over the rows) is the core's (``awa.adapters.core``); the rows and their indexes are
``MemoryTable``'s, which the store and its transaction share. One lock serialises every verb,
so each call is atomic like a transaction. The fault hooks (``faults``) sit here.
"""

from __future__ import annotations

import itertools
import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TypeVar

import attrs

from awa.adapters._presence import WorkerPresence
from awa.adapters._unreadable import TooEarly, TooLate, placeholder
from awa.adapters.core import JobQuery, RowPaths, RowTransaction, SettingsChange, StoreCore
from awa.adapters.memory.faults import FaultHooks, SimulatedCrash
from awa.adapters.memory.table import PENDING, MemoryTable
from awa.adapters.memory.transaction import MemoryTransaction
from awa.domain import DlqEntry, Job, JobState, ScheduleRecord, Unreadable
from awa.domain.retention import Retention
from awa.domain.validation import check_seconds
from awa.ports import (
    Applied,
    Clock,
    Event,
    Finish,
    Heartbeat,
    QueueSettings,
    QueueStats,
    Stale,
    StaleReason,
    SystemClock,
    UnhandledKind,
    WriteResult,
)
from awa.ports.checks import check_heartbeats, check_listener
from awa.ports.listing import Home, JobSummary, summarize
from awa.ports.summary import ENDED_WINDOW_S, DlqGroup, QueueSummary, StateGroup, build_summary
from awa.ports.unchanged import UNCHANGED

__all__ = ["MemoryStore"]

T = TypeVar("T")


@attrs.frozen
class _Counted:
    """The groups ``summarize_queues`` counted, kept until the next count."""

    at: datetime
    window_s: float
    states: tuple[StateGroup, ...]
    dead: tuple[DlqGroup, ...]


class MemoryStore(RowPaths, StoreCore, WorkerPresence):
    """``ClaimStore`` held in process memory. Thread-safe; deterministic given its clock and
    ``rng`` (backoff jitter and callback ids)."""

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        rng: random.Random | None = None,
        faults: FaultHooks | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.rng = self._random = rng if rng is not None else random.Random()
        self.faults = faults if faults is not None else FaultHooks()
        self._lock = threading.RLock()  # guards the table: each verb is one atomic step
        self._table = MemoryTable()
        self._listeners: list[Callable[[Event], None]] = []
        self._depth = 0
        self._summary: _Counted | None = None

    @contextmanager
    def _tx(self) -> Iterator[None]:
        """One atomic step; hints it raised go to listeners after the lock is released."""
        with self._lock:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                events, self._table.events = (
                    (self._table.events, []) if self._depth == 0 else ([], self._table.events)
                )
                listeners = list(self._listeners)
        for event in events:
            for listener in listeners:
                listener(event)

    @contextmanager
    def _transaction(self, action: str) -> Iterator[RowTransaction]:
        with self._tx():
            yield MemoryTransaction(self._table, self.clock.now())

    def _new_callback_id(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))

    # -- what a SQL store meets in a row written by hand ----------------------------------------
    def plant_unreadable(self, job_id: int, column: str, *, too_late: bool = False) -> Job:
        """Make the stored value of a job's ``column`` one its store cannot read back, as a
        SQL store finds a row written by hand, by another version or by a bug: the job holds
        that column's placeholder and names it in ``unreadable``
        (``awa.adapters._unreadable``), where it is or in the dead-letter queue. For the
        contract's tests of what every store does with such a row."""
        error = TooLate("planted") if too_late else TooEarly("planted")
        with self._tx():
            planted = Unreadable(column, "<planted>", str(error))

            def plant(job: Job) -> Job:
                changes = {column: placeholder(column, error)}
                return attrs.evolve(job, unreadable=(*job.unreadable, planted), **changes)

            if job_id in self._table.dlq:
                entry = self._table.dlq[job_id]
                self._table.dlq[job_id] = attrs.evolve(entry, job=plant(entry.job))
                return self._table.dlq[job_id].job
            job = plant(self._table.jobs[job_id])
            self._table.put(job)
            return job

    # -- workers: the memory store's fault hooks sit here --------------------------------------
    def _claim(
        self, queue: str, limit: int, deadline_duration_s: float, priority_aging_s: float
    ) -> list[Job]:
        """``faults.crash_after_claim``: the claim is written, the worker never hears it."""
        claimed = super()._claim(queue, limit, deadline_duration_s, priority_aging_s)
        if claimed and self.faults.take_crash():
            raise SimulatedCrash([job.lease for job in claimed])
        return claimed

    def heartbeat(self, beats: Sequence[Heartbeat]) -> list[WriteResult]:
        """A lost heartbeat (``faults.stall_heartbeats``) never reaches the store; the worker
        hears nothing back to alarm it."""
        check_heartbeats(beats)  # a bad beat refuses the call, lost or not
        with self._tx():
            delivered = [b for b in beats if not self.faults.heartbeat_is_lost(b.lease.job_id)]
            written = iter(super().heartbeat(delivered))
            results: list[WriteResult] = []
            for beat in beats:
                if self.faults.heartbeat_is_lost(beat.lease.job_id):
                    job = self._table.jobs.get(beat.lease.job_id)
                    results.append(
                        Applied(job) if job else Stale(beat.lease, StaleReason.NOT_FOUND)
                    )
                else:
                    results.append(next(written))
            return results

    def _finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        """``faults.delay_finishes`` freezes a worker mid-finish until a test lets it go."""
        held = any(self.faults.finish_is_delayed(f.lease.job_id) for f in finishes)
        if held:
            self.faults.hold_finish()
        try:
            return super()._finish(finishes)
        finally:
            if held:
                self.faults.finish_applied()

    # -- maintenance ---------------------------------------------------------------------------
    def _delete_finished(self, retention: Retention, older_than_s: float, limit: int) -> int:
        with self._tx():
            expired = self._table.expired(retention, self.clock.now(), older_than_s, limit)
            for job_id in expired:
                self._table.remove(job_id)
            return len(expired)

    def _expire_dlq(self, older_than_s: float, limit: int) -> int:
        with self._tx():
            table = self._table
            cutoff, _ = table.retention_cutoffs(self.clock.now(), older_than_s, "dlq_retention_s")
            entries = table.dlq_matching(None, None)
            expired = [e.job.id for e in entries if e.dlq_at < cutoff(e.job.queue)][:limit]
            for job_id in expired:
                del self._table.dlq[job_id]
            return len(expired)

    def _try_lead(self, owner: str, ttl_s: float) -> bool:
        with self._tx():
            now, leader = self.clock.now(), self._table.leader
            if leader is None or leader[0] == owner or leader[1] <= now:
                self._table.leader = (owner, now + timedelta(seconds=ttl_s))
                return True
            return False

    def _release_lead(self, owner: str) -> None:
        with self._tx():
            if self._table.leader is not None and self._table.leader[0] == owner:
                self._table.leader = None

    def _record_worker(self, owner: str, kinds: dict[str, tuple[str, ...]], ttl_s: float) -> None:
        with self._tx():
            now = self.clock.now()
            self._table.workers = {o: w for o, w in self._table.workers.items() if w[1] > now}
            self._table.workers[owner] = (kinds, now + timedelta(seconds=ttl_s))

    def _forget_worker(self, owner: str) -> None:
        with self._tx():
            self._table.workers.pop(owner, None)

    def _unhandled_kinds(self) -> list[UnhandledKind]:
        with self._tx():
            now = self.clock.now()
            handled = {
                (queue, kind)
                for kinds, expires_at in self._table.workers.values()
                if expires_at > now
                for queue, names in kinds.items()
                for kind in names
            }
            waiting: dict[tuple[str, str], list[datetime]] = {}
            for job in self._table.jobs.values():
                key = (job.queue, job.kind)
                if job.state in PENDING and job.run_at <= now and key not in handled:
                    waiting.setdefault(key, []).append(job.run_at)
            return [
                UnhandledKind(queue, kind, len(run_ats), min(run_ats))
                for (queue, kind), run_ats in sorted(waiting.items())
            ]

    def leader(self) -> str | None:
        """Who leads maintenance right now (for tests and diagnostics)."""
        with self._tx():
            leader = self._table.leader
            return None if leader is None or leader[1] <= self.clock.now() else leader[0]

    def snapshot(self) -> tuple[list[Job], list[DlqEntry]]:
        """Every job and every dead-letter entry, unbounded (for tests and simulation)."""
        with self._tx():
            jobs, dlq = self._table.jobs, self._table.dlq
            return [jobs[i] for i in sorted(jobs)], [dlq[i] for i in sorted(dlq)]

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        check_listener(listener)
        with self._tx():
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._tx():
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    # -- operators -----------------------------------------------------------------------------
    def _get_job(self, job_id: int) -> Job | None:
        with self._tx():
            entry = self._table.dlq.get(job_id)
            return entry.job if entry is not None else self._table.jobs.get(job_id)

    def _list_jobs(self, query: JobQuery) -> list[Job]:
        with self._tx():
            newest_first = _newest_first(self._table.jobs)
            jobs = (job for job in newest_first if query.matches(job))
            return list(itertools.islice(jobs, query.limit))

    def _list_job_summaries(
        self, query: JobQuery, home: Home, error_chars: int
    ) -> list[JobSummary]:
        with self._tx():  # the jobs are in memory already: a summary only leaves fields out
            if home == "dlq":
                entries = _newest_first(self._table.dlq)
                found = (summarize(e.job, e) for e in entries if query.matches(e.job))
            else:
                jobs = _newest_first(self._table.jobs)
                found = (summarize(job) for job in jobs if query.matches(job))
            return list(itertools.islice(found, query.limit))

    def _count_jobs(self, state: JobState | None, kind: str | None, queue: str | None) -> int:
        with self._tx():
            return sum(1 for _ in _matching(self._table.jobs.values(), state, kind, queue))

    def _discard_failed(self, queue: str | None, kind: str | None) -> int:
        with self._tx():
            doomed = [
                j.id
                for j in self._table.jobs.values()
                if j.state is JobState.FAILED
                and (queue is None or j.queue == queue)
                and (kind is None or j.kind == kind)
            ]
            for job_id in doomed:
                self._table.remove(job_id)
            return len(doomed)

    def _set_queue_paused(self, queue: str, paused: bool) -> None:
        with self._tx():
            self._table.queues[queue] = attrs.evolve(self._table.settings(queue), paused=paused)

    def _configure_queue(self, queue: str, change: SettingsChange) -> QueueSettings:
        with self._tx():
            settings = change.applied_to(self._table.settings(queue))
            if change.rate_limit is not UNCHANGED:
                self._table.buckets.pop(queue, None)  # a new rate starts with a full bucket
            if change.key_rate_limit is not UNCHANGED:
                for key in [k for k in self._table.key_buckets if k[0] == queue]:
                    del self._table.key_buckets[key]
            self._table.queues[queue] = settings
            return settings

    def queue_stats(self) -> list[QueueStats]:
        with self._tx():
            names = sorted(
                {j.queue for j in self._table.jobs.values()}
                | {e.job.queue for e in self._table.dlq.values()}
                | set(self._table.queues)
            )
            stats = []
            for name in names:
                jobs = [j for j in self._table.jobs.values() if j.queue == name]
                counts = {state: 0 for state in JobState}
                for job in jobs:
                    counts[job.state] += 1
                depth = sum(1 for e in self._table.dlq.values() if e.job.queue == name)
                available = (j.run_at for j in jobs if j.state is JobState.AVAILABLE)
                settings = self._table.settings(name)
                stats.append(QueueStats.of(settings, counts, depth, min(available, default=None)))
            return stats

    # -- the queue summary (``awa.ports.SummarizesQueues``) ----------------------------------------
    def summarize_queues(self, *, window_s: float = ENDED_WINDOW_S) -> QueueSummary:
        check_seconds("summary window", window_s, allow_zero=False)
        with self._tx():
            now = self.clock.now()

            def ended(at: datetime | None) -> bool:
                return at is not None and now - timedelta(seconds=window_s) < at <= now

            jobs = self._table.jobs.values()
            counts = Counter((j.queue, j.state) for j in jobs)
            ends = Counter((j.queue, j.state) for j in jobs if ended(j.finalized_at))
            oldest: dict[str, datetime] = {}
            for job in jobs:
                if job.state is JobState.AVAILABLE:
                    oldest[job.queue] = min(job.run_at, oldest.get(job.queue, job.run_at))
            states = tuple(
                StateGroup(
                    queue,
                    state,
                    n,
                    oldest.get(queue) if state is JobState.AVAILABLE else None,
                    ends[queue, state],
                )
                for (queue, state), n in counts.items()
            )
            dlq = self._table.dlq.values()
            entries = [((e.job.queue, e.job.kind, e.reason), e.dlq_at) for e in dlq]
            depth = Counter(key for key, _ in entries)
            arrived = Counter(key for key, at in entries if ended(at))
            latest: dict[tuple[str, str, str], datetime] = {}
            for key, at in entries:
                latest[key] = max(at, latest.get(key, at))
            dead = tuple(
                DlqGroup(*key, count=n, latest_at=latest[key], ended=arrived[key])
                for key, n in depth.items()
            )
            self._summary = _Counted(now, float(window_s), states, dead)
            summary = self.queue_summary()
            assert summary is not None
            return summary

    def queue_summary(self) -> QueueSummary | None:
        with self._tx():
            counted = self._summary
            if counted is None:
                return None
            settings = list(self._table.queues.values())
            return build_summary(
                counted.at, counted.window_s, counted.states, counted.dead, settings
            )

    def _list_dlq(
        self, queue: str | None, kind: str | None, limit: int, before_id: int | None
    ) -> list[DlqEntry]:
        with self._tx():
            entries = (
                self._table.dlq[job_id]
                for job_id in sorted(self._table.dlq, reverse=True)
                if before_id is None or job_id < before_id
            )
            matching = (
                e
                for e in entries
                if (queue is None or e.job.queue == queue) and (kind is None or e.job.kind == kind)
            )
            return list(itertools.islice(matching, limit))

    def _get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        with self._tx():
            return self._table.dlq.get(job_id)

    def _purge_dlq(self, queue: str | None, kind: str | None) -> int:
        with self._tx():
            ids = [e.job.id for e in self._table.dlq_matching(queue, kind)]
            for job_id in ids:
                del self._table.dlq[job_id]
            return len(ids)

    def _purge_dlq_job(self, job_id: int) -> bool:
        with self._tx():
            return self._table.dlq.pop(job_id, None) is not None

    # -- periodic schedules --------------------------------------------------------------------
    def list_schedules(self) -> list[ScheduleRecord]:
        with self._tx():
            return [self._table.schedules[name] for name in sorted(self._table.schedules)]

    def _upcoming_schedules(self, limit: int) -> tuple[datetime, list[ScheduleRecord]]:
        with self._tx():
            active = (r for r in self._table.schedules.values() if not r.paused)
            upcoming = sorted(active, key=lambda r: (r.next_fire_at, r.name))[:limit]
            return self.clock.now(), upcoming

    def _remove_schedule(self, name: str) -> bool:
        with self._tx():
            return self._table.schedules.pop(name, None) is not None


def _matching(
    jobs: Iterable[Job], state: JobState | None, kind: str | None, queue: str | None
) -> Iterator[Job]:
    """``list_jobs``'s filters (``None``: any)."""
    return (
        j
        for j in jobs
        if (state is None or j.state is state)
        and (kind is None or j.kind == kind)
        and (queue is None or j.queue == queue)
    )


def _newest_first(rows: dict[int, T]) -> Iterator[T]:
    """The rows of a table keyed by job id, newest id first."""
    return map(rows.__getitem__, sorted(rows, reverse=True))
