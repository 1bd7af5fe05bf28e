"""What the core asks of a store: one atomic ``Transaction`` of its work ("lock these rows",
"write these rows"), and the checked filters of a listing (``JobQuery``).

``RowTransaction`` adds the few reads and the one write that the core's own insert, claim and
promote need (``awa.adapters.core.row_paths``); a store that runs those three as statements of
its own (PostgreSQL) needs only ``Transaction``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol, TypeVar

import attrs

from awa.adapters._fencing import Locked, Writes
from awa.domain import Job, JobState, Lease, ScheduleRecord
from awa.domain.flow import Bucket, FlowLimits, RateLimit
from awa.ports import QueueSettings
from awa.ports.unchanged import UNCHANGED, Unchanged

__all__ = [
    "FlowTransaction",
    "JobBatch",
    "JobQuery",
    "QueueFlow",
    "RowTransaction",
    "SettingsChange",
    "Transaction",
    "UniqueKeyRace",
]


class UniqueKeyRace(Exception):
    """A store's unique-key enforcement refused a write the core had checked: a concurrent
    transaction took the key in between. Nothing was written; the core runs the verb again."""


@attrs.frozen
class JobQuery:
    """``list_jobs``'s checked filters, as one value an adapter's ``_list_jobs`` reads: the
    matching jobs newest id first, ids below ``before_id`` when given, at most ``limit``."""

    state: JobState | None
    kind: str | None
    queue: str | None
    tag: str | None
    before_id: int | None
    limit: int

    def matches(self, job: Job) -> bool:
        """Whether ``job`` passes the filters (the limit and order are the caller's)."""
        return (
            (self.state is None or job.state is self.state)
            and (self.kind is None or job.kind == self.kind)
            and (self.queue is None or job.queue == self.queue)
            and (self.tag is None or self.tag in job.tags)
            and (self.before_id is None or job.id < self.before_id)
        )


@attrs.frozen
class JobBatch:
    """One batch of a bulk operator's verb, as ``Transaction.lock_jobs`` reads it: jobs
    outside the dead-letter queue in one of ``states`` (and ``queue``, ``kind`` when given)
    whose id is above ``after_id``, at most ``limit``, in id order."""

    states: tuple[JobState, ...]
    queue: str | None
    kind: str | None
    after_id: int
    limit: int

    def matches(self, job: Job) -> bool:
        """Whether ``job`` passes the filters (the limit and order are the caller's)."""
        return (
            job.id > self.after_id
            and job.state in self.states
            and (self.queue is None or job.queue == self.queue)
            and (self.kind is None or job.kind == self.kind)
        )


@attrs.frozen
class SettingsChange:
    """``configure_queue``'s checked settings, as an adapter stores them: a retention or
    ``dlq_enabled`` that is ``None`` stays as it is; a flow limit that is ``UNCHANGED`` stays
    as it is, and ``None`` removes it. A ``rate_limit`` given starts a full bucket, a
    ``key_rate_limit`` given full buckets for every key."""

    dlq_enabled: bool | None = None
    finished_retention_s: float | None = None
    dlq_retention_s: float | None = None
    failed_retention_s: float | None = None
    concurrency_limit: int | Unchanged | None = UNCHANGED
    rate_limit: RateLimit | Unchanged | None = UNCHANGED
    key_concurrency_limit: int | Unchanged | None = UNCHANGED
    key_rate_limit: RateLimit | Unchanged | None = UNCHANGED

    def applied_to(self, old: QueueSettings) -> QueueSettings:
        """``old`` with this change made (for a store that keeps settings as values)."""
        return QueueSettings(
            old.queue,
            old.paused,
            _given(self.dlq_enabled, old.dlq_enabled),
            _given(self.finished_retention_s, old.finished_retention_s),
            _given(self.dlq_retention_s, old.dlq_retention_s),
            _given(self.failed_retention_s, old.failed_retention_s),
            _kept(self.concurrency_limit, old.concurrency_limit),
            _kept(self.rate_limit, old.rate_limit),
            _kept(self.key_concurrency_limit, old.key_concurrency_limit),
            _kept(self.key_rate_limit, old.key_rate_limit),
        )


T = TypeVar("T")


def _given(value: T | None, old: T) -> T:
    return old if value is None else value


def _kept(value: T | Unchanged, old: T) -> T:
    return old if value is UNCHANGED else value


@attrs.frozen
class QueueFlow:
    """What a claim of a limited queue decides under: its limits, its rate bucket as the
    last claim left it (``None``: full, as after ``rate_limit`` was set), and, in a queue with
    key limits, the key whose turn came last (``turn_cursor``; ``None`` is the jobs without a
    key) once a claim took a turn (``turn_taken``; before that, turns start at the first key)."""

    limits: FlowLimits
    bucket: Bucket | None = None
    turn_cursor: str | None = None
    turn_taken: bool = False


class Transaction(Protocol):
    """One atomic unit of a store's work: what it locks stays locked until it ends, and what
    it writes becomes visible (and its hints are sent) all at once when it commits."""

    def now(self) -> datetime:
        """The transaction's time, on the store's clock."""
        ...

    def lock_leases(self, leases: Sequence[Lease]) -> dict[Lease, Locked]:
        """THE LEASE GUARD: lock the jobs whose ``(id, run_lease)`` is among ``leases``; a
        lease with no entry owns nothing. The state half of the guard is the domain's: the
        transition table refuses a move from a state that is not live (``Stale``)."""
        ...

    def lease_states(self, job_ids: Sequence[int]) -> dict[int, tuple[int, JobState]]:
        """``(run_lease, state)`` of these jobs (missing: not among the jobs any more)."""
        ...

    def lock_job(self, job_id: int) -> Locked | None:
        """Lock a job outside the dead-letter queue."""
        ...

    def lock_dead_letter(self, job_id: int) -> Job | None:
        """Lock a dead-lettered job."""
        ...

    def lock_dead_letters(self, queue: str | None, kind: str | None) -> list[Job]:
        """Lock every matching dead-lettered job, in ``(dlq_at, id)`` order."""
        ...

    def lock_callback(self, callback_id: str) -> Locked | None:
        """Lock the job whose pending callback this is."""
        ...

    def callback_pending(self, callback_id: str) -> bool: ...

    def lock_unique_holder(self, key: str) -> Locked | None:
        """Lock the job that holds unique key ``key`` (``awa.domain.holds_unique_key``)."""
        ...

    def lock_jobs(self, batch: JobBatch) -> list[Locked]:
        """Lock the jobs of ``batch`` (``JobBatch.matches``), up to its limit, in id order."""
        ...

    def lock_schedules(self, names: Sequence[str]) -> dict[str, ScheduleRecord]:
        """Lock the schedules of these names that exist."""
        ...

    def rescue_candidates(self, staleness_s: float, limit: int) -> list[Locked]:
        """Lock up to ``limit`` live jobs, in id order, for which ``rescue_cause`` gives a
        cause at ``now()``: heartbeat older than ``staleness_s``, deadline or callback timeout
        passed."""
        ...

    def write(self, writes: Writes) -> None:
        """Write the decided jobs back, move the dead letters (with ``now()`` as ``dlq_at``),
        put restored jobs back, upsert the schedules, and send the hints: cancels, answered
        callbacks, and one wake-up per queue that got runnable jobs. A restored or retried job
        that retakes a unique key someone took meanwhile raises ``UniqueKeyRace``."""
        ...


class FlowTransaction(Transaction, Protocol):
    """A ``Transaction`` that also reads and writes what a claim of a limited queue decides
    over (``awa.adapters.core.flow``): every store's, PostgreSQL's too."""

    def queue_flow(self, queue: str) -> QueueFlow | None:
        """``queue``'s flow limits and rate bucket, locked until the transaction ends (so the
        claims of a limited queue take their turns); ``None`` when it has no limit."""
        ...

    def live_attempts(self, queue: str) -> int:
        """How many attempts of ``queue`` are live: ``running`` or ``waiting_external``."""
        ...

    def keep_bucket(self, queue: str, bucket: Bucket) -> None:
        """Store ``queue``'s rate bucket as a claim left it."""
        ...

    def live_by_key(self, queue: str) -> dict[str, int]:
        """How many attempts of ``queue`` are live per ``concurrency_key`` (keys with none,
        and the jobs without a key, left out). Asked only of a queue with key limits."""
        ...

    def key_buckets(self, queue: str, keys: Sequence[str]) -> dict[str, Bucket]:
        """The rate buckets of these keys of ``queue`` as claims left them; a key without
        one is full (left out). Asked only of a queue with a ``key_rate_limit``."""
        ...

    def keep_key_buckets(self, queue: str, buckets: Mapping[str, Bucket]) -> None:
        """Store these keys' rate buckets as a claim left them."""
        ...

    def keep_turn_cursor(self, queue: str, key: str | None) -> None:
        """Store the key whose turn came last in ``queue`` (``None``: the jobs without a key):
        the next claim's turns start after it (``awa.domain.flow_turns``)."""
        ...


class RowTransaction(FlowTransaction, Protocol):
    """A ``Transaction`` that also reads what the core's own claim, promote and insert decide
    over, and writes the jobs an insert creates."""

    def queue_paused(self, queue: str) -> bool:
        """Whether ``queue`` is paused (a queue without settings is not)."""
        ...

    def claim_candidates(
        self, queue: str, limit: int, priority_aging_s: float, per_key: bool = False
    ) -> list[Job]:
        """Lock runnable jobs of ``queue`` (available, scheduled or retryable, ``run_at`` come
        by ``now()``) whose ordering key is free, among which are the first ``limit`` in
        ``decisions.claim_order`` with ``priority_aging_s``; with ``per_key``, the first
        ``limit`` of each ``concurrency_key`` and of the jobs without one. In any order (the
        core sorts them).

        THE ORDERING FILTER: a job with an ``ordering_key`` is a candidate only if it is the
        key's head, the lowest id among the unfinished jobs of its ``(queue, ordering_key)``
        (scheduled, available, retryable, running, waiting_external), and no attempt of the
        key is live. So at most one job per key is a candidate (``awa.domain.flow_claims``)."""
        ...

    def due_jobs(self, limit: int) -> list[Job]:
        """Lock up to ``limit`` scheduled and retryable jobs whose ``run_at`` has come by
        ``now()``, in ``(run_at, id)`` order."""
        ...

    def next_job_id(self) -> int:
        """The id the next new job gets; the jobs of one insert count up from it."""
        ...

    def insert_jobs(self, jobs: Sequence[Job]) -> None:
        """Write new jobs (row 1, their ids counting up from ``next_job_id``), and send one
        wake-up per queue that got available jobs."""
        ...
