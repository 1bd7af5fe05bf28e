"""The in-memory claim store: a real adapter built on the domain table, for tests and
simulation. One lock serialises every verb, so each call is atomic like a transaction."""

from __future__ import annotations

import bisect
import itertools
import random
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import attrs

from awa.adapters.memory.faults import FaultHooks, SimulatedCrash
from awa.domain import (
    CallbackNotFound,
    Decision,
    DlqEntry,
    IllegalTransition,
    Job,
    JobNotFound,
    JobState,
    Lease,
    NewJob,
    Resolution,
    ValidationError,
    decisions,
)
from awa.domain.rescue import rescue_cause
from awa.domain.transitions import Trigger, allowed_from
from awa.domain.validation import check_queue, check_seconds, check_state
from awa.ports import (
    DEFAULT_DEADLINE_S,
    DEFAULT_STALENESS_S,
    Applied,
    CallbackResolved,
    CancelRequested,
    Clock,
    Event,
    Finish,
    Heartbeat,
    JobsAvailable,
    QueueStats,
    Rescued,
    Stale,
    StaleReason,
    SystemClock,
    WriteResult,
)
from awa.ports.checks import (
    check_batch,
    check_dlq_filter,
    check_finishes,
    check_heartbeats,
    check_job_id,
    check_limit,
)

__all__ = ["MemoryStore"]

_T = TypeVar("_T")


_PENDING = frozenset({JobState.SCHEDULED, JobState.AVAILABLE, JobState.RETRYABLE})
_WAITING_FOR_TIME = frozenset({JobState.SCHEDULED, JobState.RETRYABLE})


class _SortedKeys:
    """Keys kept in order with ``bisect``: the indexes that let claim, promote and retention
    look at the few jobs they need instead of every job (the simulation holds thousands)."""

    def __init__(self) -> None:
        self.keys: list[tuple[Any, ...]] = []

    def add(self, key: tuple[Any, ...]) -> None:
        bisect.insort(self.keys, key)

    def discard(self, key: tuple[Any, ...]) -> None:
        at = bisect.bisect_left(self.keys, key)
        if at < len(self.keys) and self.keys[at] == key:
            del self.keys[at]

    def from_prefix(self, prefix: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        """Keys from the first one starting with ``prefix`` onwards (a copy-free walk)."""
        at = bisect.bisect_left(self.keys, prefix)
        while at < len(self.keys):
            yield self.keys[at]
            at += 1


@attrs.define
class _QueueSettings:
    paused: bool = False
    dlq_enabled: bool = False


class MemoryStore:
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
        self.rng = rng if rng is not None else random.Random()
        self.faults = faults if faults is not None else FaultHooks()
        self._lock = threading.RLock()
        self._jobs: dict[int, Job] = {}
        self._dlq: dict[int, DlqEntry] = {}
        self._queues: dict[str, _QueueSettings] = {}
        self._callbacks: dict[str, int] = {}  # pending callback id -> job id
        self._claim_order: dict[str, _SortedKeys] = {}  # queue -> (priority, run_at, id)
        self._due_order = _SortedKeys()  # scheduled and retryable: (run_at, id)
        self._finished_order = _SortedKeys()  # terminal, outside the DLQ: (finalized_at, id)
        self._live: set[int] = set()
        self._next_id = 1
        self._leader: tuple[str, datetime] | None = None
        self._listeners: list[Callable[[Event], None]] = []
        self._events: list[Event] = []
        self._depth = 0

    @contextmanager
    def _tx(self) -> Iterator[None]:
        """One atomic step; hints it raised go to listeners after the lock is released."""
        with self._lock:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                events, self._events = (
                    (self._events, []) if self._depth == 0 else ([], self._events)
                )
                listeners = list(self._listeners)
        for event in events:
            for listener in listeners:
                listener(event)

    def _available(self, jobs: Iterable[Job]) -> None:
        for queue in sorted({j.queue for j in jobs if j.state is JobState.AVAILABLE}):
            self._events.append(JobsAvailable(queue))

    # -- bookkeeping ---------------------------------------------------------------------------
    def _put(self, job: Job) -> None:
        old = self._jobs.get(job.id)
        if old is not None:
            self._unindex(old)
        self._jobs[job.id] = job
        self._index(job)

    def _remove(self, job_id: int) -> Job:
        job = self._jobs.pop(job_id)
        self._unindex(job)
        return job

    def _index(self, job: Job) -> None:
        if job.callback_id is not None:
            self._callbacks[job.callback_id] = job.id
        if job.state in _PENDING:
            order = self._claim_order.setdefault(job.queue, _SortedKeys())
            order.add((job.priority, job.run_at, job.id))
        if job.state in _WAITING_FOR_TIME:
            self._due_order.add((job.run_at, job.id))
        if job.state.is_live:
            self._live.add(job.id)
        if job.state.is_terminal and job.finalized_at is not None:
            self._finished_order.add((job.finalized_at, job.id))

    def _unindex(self, job: Job) -> None:
        if job.callback_id is not None:
            self._callbacks.pop(job.callback_id, None)
        if job.state in _PENDING:
            self._claim_order[job.queue].discard((job.priority, job.run_at, job.id))
        if job.state in _WAITING_FOR_TIME:
            self._due_order.discard((job.run_at, job.id))
        self._live.discard(job.id)
        if job.state.is_terminal and job.finalized_at is not None:
            self._finished_order.discard((job.finalized_at, job.id))

    def _settings(self, queue: str) -> _QueueSettings:
        return self._queues.setdefault(queue, _QueueSettings())

    def _store(self, decision: Decision) -> bool:
        """Persist a decision; a failed job on a DLQ-enabled queue goes to the DLQ instead.
        Returns whether it was dead-lettered."""
        job = decision.job
        if (
            job.state is JobState.FAILED
            and decision.dlq_reason is not None
            and job.queue in self._queues
            and self._queues[job.queue].dlq_enabled
        ):
            self._remove(job.id)
            self._dlq[job.id] = decisions.move_to_dlq(job, decision.dlq_reason, self.clock.now())
            return True
        self._put(job)
        return False

    def _stale_reason(self, lease: Lease) -> StaleReason:
        job = self._jobs.get(lease.job_id)
        if job is None:
            return StaleReason.NOT_FOUND
        if job.run_lease != lease.run_lease:
            return StaleReason.LEASE_SUPERSEDED
        if job.state is JobState.CANCELLED:
            return StaleReason.CANCELLED
        return StaleReason.STATE_CHANGED

    def _fenced(self, lease: Lease, write: Callable[[Job], Job | Decision]) -> WriteResult:
        """Apply ``write`` only if ``lease`` still owns the job; otherwise report it stale.
        ``write`` raises ``IllegalTransition`` when the job's state does not allow it."""
        job = self._jobs.get(lease.job_id)
        if job is None or job.run_lease != lease.run_lease:
            return Stale(lease, self._stale_reason(lease))
        try:
            result = write(job)
        except IllegalTransition:
            return Stale(lease, self._stale_reason(lease))
        except CallbackNotFound:
            return Stale(lease, StaleReason.CALLBACK_RESOLVED)
        if isinstance(result, Decision):
            self._store(result)
            return Applied(result.job)
        self._put(result)
        return Applied(result)

    def _find(self, job_id: int) -> Job:
        job = self._jobs.get(check_job_id(job_id))
        if job is None:
            raise JobNotFound(job_id)
        return job

    # -- producers -----------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob]) -> list[Job]:
        check_batch(jobs, "jobs", NewJob)
        with self._tx():
            now = self.clock.now()
            created = []
            for new in jobs:
                job = decisions.create_job(new, job_id=self._next_id, now=now)
                self._next_id += 1
                self._put(job)
                created.append(job)
            self._available(created)
            return created

    # -- workers -------------------------------------------------------------------------------
    def claim(
        self, queue: str, *, limit: int, deadline_duration_s: float = DEFAULT_DEADLINE_S
    ) -> list[Job]:
        check_queue(queue)
        check_limit(limit)
        check_seconds("deadline_duration", deadline_duration_s)
        with self._tx():
            if queue in self._queues and self._queues[queue].paused:
                return []
            now = self.clock.now()
            runnable = [self._jobs[job_id] for job_id in self._runnable(queue, now, limit)]
            claimed = [decisions.claim(job, now, deadline_duration_s) for job in runnable]
            for job in claimed:
                self._put(job)
        if claimed and self.faults.take_crash():
            raise SimulatedCrash([job.lease for job in claimed])
        return claimed

    def _runnable(self, queue: str, now: datetime, limit: int) -> list[int]:
        """Ids in claim order ``(priority, run_at, id)``. A pending job is runnable once its
        ``run_at`` has come, so within each priority the runnable ones come first."""
        order = self._claim_order.get(queue)
        if order is None:
            return []
        found: list[int] = []
        for priority in range(1, 5):
            for key_priority, run_at, job_id in order.from_prefix((priority,)):
                if key_priority != priority or run_at > now or len(found) == limit:
                    break
                found.append(job_id)
        return found

    def heartbeat(self, beats: Sequence[Heartbeat]) -> list[WriteResult]:
        check_heartbeats(beats)
        with self._tx():
            now = self.clock.now()
            results: list[WriteResult] = []
            for beat in beats:
                if self.faults.heartbeat_is_lost(beat.lease.job_id):
                    job = self._jobs.get(beat.lease.job_id)
                    # the worker hears nothing back to alarm it; the store never saw the beat
                    results.append(
                        Applied(job) if job else Stale(beat.lease, StaleReason.NOT_FOUND)
                    )
                    continue
                results.append(
                    self._fenced(
                        beat.lease,
                        partial(
                            decisions.heartbeat,
                            now=now,
                            progress=beat.progress,
                            metadata=beat.metadata,
                        ),
                    )
                )
            return results

    def finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        check_finishes(finishes)
        held = any(self.faults.finish_is_delayed(f.lease.job_id) for f in finishes)
        if held:
            self.faults.hold_finish()
        try:
            with self._tx():
                now = self.clock.now()
                return [
                    self._fenced(
                        f.lease,
                        partial(
                            decisions.finish,
                            outcome=f.outcome,
                            now=now,
                            rng=self.rng,
                            progress=f.progress,
                            metadata=f.metadata,
                        ),
                    )
                    for f in finishes
                ]
        finally:
            if held:
                self.faults.finish_applied()

    def register_callback(
        self, lease: Lease, *, timeout_s: float = 3600.0, callback_id: str | None = None
    ) -> WriteResult:
        check_seconds("callback timeout", timeout_s, allow_zero=False)
        with self._tx():
            if callback_id is None:
                callback_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            elif callback_id in self._callbacks:
                raise ValidationError(f"callback id {callback_id!r} is already pending")
            now = self.clock.now()
            cid = callback_id
            return self._fenced(
                lease, lambda job: decisions.register_callback(job, cid, timeout_s, now)
            )

    # -- callbacks -----------------------------------------------------------------------------
    def _callback_job(self, callback_id: str) -> Job:
        job_id = self._callbacks.get(callback_id)
        if job_id is None:
            raise CallbackNotFound(callback_id)
        return self._jobs[job_id]

    def resolve_callback(self, callback_id: str, resolution: Resolution) -> Job:
        with self._tx():
            job = self._callback_job(callback_id)
            decision = decisions.resolve_callback(job, callback_id, resolution, self.clock.now())
            self._store(decision)
            self._events.append(CallbackResolved(job.lease))
            self._available([decision.job])
            return decision.job

    def heartbeat_callback(self, callback_id: str, *, timeout_s: float) -> Job:
        with self._tx():
            job = self._callback_job(callback_id)
            job = decisions.heartbeat_callback(job, callback_id, timeout_s, self.clock.now())
            self._put(job)
            return job

    # -- maintenance ---------------------------------------------------------------------------
    def rescue(
        self, *, staleness_s: float = DEFAULT_STALENESS_S, limit: int = 1000
    ) -> list[Rescued]:
        check_seconds("heartbeat staleness", staleness_s, allow_zero=False)
        check_limit(limit)
        with self._tx():
            now = self.clock.now()
            rescued: list[Rescued] = []
            for job in [self._jobs[job_id] for job_id in sorted(self._live)]:
                if len(rescued) >= limit:
                    break
                cause = rescue_cause(job, now, staleness_s)
                if cause is None:
                    continue
                decision = decisions.rescue(job, cause, now, self.rng)
                rescued.append(Rescued(decision.job, cause, self._store(decision)))
            return rescued

    def promote(self, *, limit: int = 1000) -> list[Job]:
        check_limit(limit)
        with self._tx():
            now = self.clock.now()
            due: list[Job] = []
            for run_at, job_id in self._due_order.from_prefix(()):
                if run_at > now or len(due) == limit:
                    break
                due.append(self._jobs[job_id])
            promoted = [decisions.promote(job, now) for job in due]
            for job in promoted:
                self._put(job)
            self._available(promoted)
            return promoted

    def delete_finished(self, *, older_than_s: float, limit: int = 1000) -> int:
        check_seconds("older_than", older_than_s)
        check_limit(limit)
        with self._tx():
            cutoff = self.clock.now() - timedelta(seconds=older_than_s)
            expired: list[int] = []
            for finalized_at, job_id in self._finished_order.from_prefix(()):
                if finalized_at >= cutoff or len(expired) == limit:
                    break
                expired.append(job_id)
            for job_id in expired:
                self._remove(job_id)
            return len(expired)

    def expire_dlq(self, *, older_than_s: float, limit: int = 1000) -> int:
        check_seconds("older_than", older_than_s)
        check_limit(limit)
        with self._tx():
            cutoff = self.clock.now() - timedelta(seconds=older_than_s)
            expired = [e.job.id for e in self._dlq_matching(None, None) if e.dlq_at < cutoff][
                :limit
            ]
            for job_id in expired:
                del self._dlq[job_id]
            return len(expired)

    def try_lead(self, owner: str, *, ttl_s: float) -> bool:
        check_seconds("leader ttl", ttl_s, allow_zero=False)
        with self._tx():
            now = self.clock.now()
            if self._leader is None or self._leader[0] == owner or self._leader[1] <= now:
                self._leader = (owner, now + timedelta(seconds=ttl_s))
                return True
            return False

    def leader(self) -> str | None:
        """Who leads maintenance right now (for tests and diagnostics)."""
        with self._tx():
            if self._leader is None or self._leader[1] <= self.clock.now():
                return None
            return self._leader[0]

    def snapshot(self) -> tuple[list[Job], list[DlqEntry]]:
        """Every job and every dead-letter entry, unbounded (for tests and simulation)."""
        with self._tx():
            return [self._jobs[i] for i in sorted(self._jobs)], [
                self._dlq[i] for i in sorted(self._dlq)
            ]

    def release_lead(self, owner: str) -> None:
        with self._tx():
            if self._leader is not None and self._leader[0] == owner:
                self._leader = None

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        with self._tx():
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._tx():
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    # -- operators -----------------------------------------------------------------------------
    def get_job(self, job_id: int) -> Job:
        with self._tx():
            entry = self._dlq.get(check_job_id(job_id))
            return entry.job if entry is not None else self._find(job_id)

    def list_jobs(
        self,
        *,
        state: JobState | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        state = check_state(state) if state is not None else None
        check_dlq_filter(queue, kind, all=True)
        check_limit(limit)
        with self._tx():
            jobs = (
                j
                for j in (self._jobs[job_id] for job_id in sorted(self._jobs))
                if (state is None or j.state is state)
                and (kind is None or j.kind == kind)
                and (queue is None or j.queue == queue)
            )
            return list(itertools.islice(jobs, limit))

    def cancel(self, job_id: int) -> Job:
        with self._tx():
            entry = self._dlq.get(job_id)
            if entry is not None:
                raise IllegalTransition(
                    entry.job.state, Trigger.CANCEL, allowed_from(Trigger.CANCEL), job_id
                )
            job = self._find(job_id)
            decision = decisions.cancel(job, self.clock.now())
            self._store(decision)
            if job.state.is_live:
                self._events.append(CancelRequested(job.lease))
            return decision.job

    def retry(self, job_id: int) -> Job:
        with self._tx():
            if job_id in self._dlq:
                return self.retry_from_dlq(job_id)
            job = decisions.operator_retry(self._find(job_id), self.clock.now())
            self._put(job)
            self._available([job])
            return job

    def pause_queue(self, queue: str) -> None:
        with self._tx():
            self._settings(check_queue(queue)).paused = True

    def resume_queue(self, queue: str) -> None:
        with self._tx():
            self._settings(check_queue(queue)).paused = False

    def set_dlq_enabled(self, queue: str, enabled: bool) -> None:
        with self._tx():
            self._settings(check_queue(queue)).dlq_enabled = bool(enabled)

    def queue_stats(self) -> list[QueueStats]:
        with self._tx():
            names = sorted(
                {j.queue for j in self._jobs.values()}
                | {e.job.queue for e in self._dlq.values()}
                | set(self._queues)
            )
            stats = []
            for name in names:
                jobs = [j for j in self._jobs.values() if j.queue == name]
                counts = {state: 0 for state in JobState}
                for job in jobs:
                    counts[job.state] += 1
                settings = self._queues.get(name, _QueueSettings())
                stats.append(
                    QueueStats(
                        queue=name,
                        counts=counts,
                        dlq_depth=sum(1 for e in self._dlq.values() if e.job.queue == name),
                        paused=settings.paused,
                        dlq_enabled=settings.dlq_enabled,
                        oldest_available_at=min(
                            (j.run_at for j in jobs if j.state is JobState.AVAILABLE),
                            default=None,
                        ),
                    )
                )
            return stats

    # -- the dead-letter queue -----------------------------------------------------------------
    def move_to_dlq(self, job_id: int, *, reason: str) -> DlqEntry:
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError("a dead-letter reason is required")
        with self._tx():
            entry = decisions.move_to_dlq(self._find(job_id), reason, self.clock.now())
            self._remove(job_id)
            self._dlq[job_id] = entry
            return entry

    def _dlq_matching(self, queue: str | None, kind: str | None) -> Iterable[DlqEntry]:
        return (
            e
            for e in sorted(self._dlq.values(), key=lambda e: (e.dlq_at, e.job.id))
            if (queue is None or e.job.queue == queue) and (kind is None or e.job.kind == kind)
        )

    def list_dlq(
        self, *, queue: str | None = None, kind: str | None = None, limit: int = 100
    ) -> list[DlqEntry]:
        check_dlq_filter(queue, kind, all=True)
        check_limit(limit)
        with self._tx():
            return list(itertools.islice(self._dlq_matching(queue, kind), limit))

    def get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        with self._tx():
            return self._dlq.get(check_job_id(job_id))

    def retry_from_dlq(self, job_id: int) -> Job:
        with self._tx():
            entry = self._dlq.get(check_job_id(job_id))
            if entry is None:
                raise JobNotFound(job_id)
            job = decisions.operator_retry(entry.job, self.clock.now())
            del self._dlq[job_id]
            self._put(job)
            self._available([job])
            return job

    def bulk_retry_from_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> list[Job]:
        check_dlq_filter(queue, kind, all)
        with self._tx():
            ids = [e.job.id for e in self._dlq_matching(queue, kind)]
            return [self.retry_from_dlq(job_id) for job_id in ids]

    def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        check_dlq_filter(queue, kind, all)
        with self._tx():
            ids = [e.job.id for e in self._dlq_matching(queue, kind)]
            for job_id in ids:
                del self._dlq[job_id]
            return len(ids)
