"""Values crossing the store port: write requests and their results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from awa.domain import DatabaseError, FirePlan, Job, JobState, Lease, Outcome, RescueCause
from awa.domain.fencing import StaleReason
from awa.domain.flow import FlowLimits, RateLimit

__all__ = [
    "Applied",
    "CallbackResolved",
    "CancelRequested",
    "Event",
    "Finish",
    "FireRound",
    "Heartbeat",
    "JobsAvailable",
    "PartlyWritten",
    "QueueSettings",
    "QueueStats",
    "Rescued",
    "Stale",
    "StaleReason",
    "UnhandledKind",
    "WriteResult",
]


@attrs.frozen
class Applied:
    job: Job


@attrs.frozen
class Stale:
    lease: Lease
    reason: StaleReason


WriteResult = Applied | Stale


class PartlyWritten(DatabaseError):
    """A batched write committed some of its requests, not all: ``results`` holds one entry a
    request, in request order, ``None`` for each request that was not written (its row was held
    by another session for longer than the store would wait, or the database failed once the
    rest had committed). Write those again, and only those: a request that was written would
    come back ``Stale`` the second time."""

    def __init__(self, message: str, results: Sequence[WriteResult | None]) -> None:
        super().__init__(message)
        self.results: list[WriteResult | None] = list(results)


@attrs.frozen
class Heartbeat:
    """A live attempt's proof of life, with any progress and metadata it buffered."""

    lease: Lease
    progress: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None


@attrs.frozen
class Finish:
    """A handler's outcome for one attempt, with its last buffered progress and metadata.

    ``claimed`` is optional: the job as the worker claimed it (holding ``lease``). A store may
    take from it the columns no write changes while a lease holds (kind, queue, args, tags and
    the like) instead of reading them back; everything an attempt can change is always read
    from the store."""

    lease: Lease
    outcome: Outcome
    progress: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None
    claimed: Job | None = None


@attrs.frozen
class Rescued:
    """An attempt maintenance ended, why, and the job afterwards (``failed`` when spent)."""

    job: Job
    cause: RescueCause
    dead_lettered: bool


@attrs.frozen
class QueueSettings:
    """A queue's settings as the store holds them, shared by every process working the queue.

    A retention of ``None`` means the queue has none of its own: the maintenance leader's
    ``RuntimeConfig`` default applies. ``finished_retention_s`` keeps the queue's completed
    jobs, ``failed_retention_s`` its failed and cancelled ones outside the dead-letter queue
    (``awa.domain.retention``), ``dlq_retention_s`` its dead-letter entries.

    The flow limits hold for the whole fleet (``docs/flow-control.md``):
    ``concurrency_limit``, the most attempts of the queue live at once (``running`` or
    ``waiting_external``) across every process; ``rate_limit``, the token bucket its
    attempts start from; ``key_concurrency_limit`` and ``key_rate_limit``, the same for each
    ``concurrency_key`` of the queue apart. ``None``: no such limit."""

    queue: str
    paused: bool = False
    dlq_enabled: bool = False
    finished_retention_s: float | None = None
    dlq_retention_s: float | None = None
    failed_retention_s: float | None = None
    concurrency_limit: int | None = None
    rate_limit: RateLimit | None = None
    key_concurrency_limit: int | None = None
    key_rate_limit: RateLimit | None = None

    @property
    def flow_limits(self) -> FlowLimits:
        """The limits a claim of the queue decides under (``awa.domain.flow``)."""
        return FlowLimits(
            concurrency_limit=self.concurrency_limit,
            rate_limit=self.rate_limit,
            key_concurrency_limit=self.key_concurrency_limit,
            key_rate_limit=self.key_rate_limit,
        )


@attrs.frozen
class FireRound:
    """What a maintenance leader learns from ``plan_fires``: the store's time, the plans of
    the schedules due then, and when the next fire after them comes (``None``: no schedule
    is active). ``more``: other schedules may be due too (the round hit its limit)."""

    now: datetime
    plans: list[FirePlan]
    next_fire_at: datetime | None
    more: bool = False


@attrs.frozen
class QueueStats:
    queue: str
    counts: Mapping[JobState, int]
    dlq_depth: int
    paused: bool
    dlq_enabled: bool
    oldest_available_at: datetime | None
    #: the queue's own retention periods (``QueueSettings``); ``None``: the leader's default
    finished_retention_s: float | None = None
    dlq_retention_s: float | None = None
    failed_retention_s: float | None = None
    #: the states whose count is an estimate (a queue summary may estimate a large group of
    #: finished jobs); empty: every count is exact
    estimated: frozenset[JobState] = frozenset()
    #: the queue's fleet-wide flow limits (``QueueSettings``); ``None``: no such limit
    concurrency_limit: int | None = None
    rate_limit: RateLimit | None = None
    key_concurrency_limit: int | None = None
    key_rate_limit: RateLimit | None = None

    @property
    def live(self) -> int:
        """The attempts that hold a slot of ``concurrency_limit``: running and parked."""
        return self.counts.get(JobState.RUNNING, 0) + self.counts.get(JobState.WAITING_EXTERNAL, 0)

    @classmethod
    def of(
        cls,
        settings: QueueSettings,
        counts: Mapping[JobState, int],
        dlq_depth: int,
        oldest_available_at: datetime | None,
    ) -> QueueStats:
        """The statistics of the queue ``settings`` belong to, with those settings."""
        return cls(
            settings.queue,
            counts,
            dlq_depth,
            settings.paused,
            settings.dlq_enabled,
            oldest_available_at,
            settings.finished_retention_s,
            settings.dlq_retention_s,
            settings.failed_retention_s,
            concurrency_limit=settings.concurrency_limit,
            rate_limit=settings.rate_limit,
            key_concurrency_limit=settings.key_concurrency_limit,
            key_rate_limit=settings.key_rate_limit,
        )


@attrs.frozen
class UnhandledKind:
    """Jobs of ``kind`` runnable now on ``queue`` that no live worker there handles: a
    producer inserted them where no worker registered that kind (or every such worker is
    gone). ``oldest_run_at``: how long the first of them has been waiting."""

    queue: str
    kind: str
    runnable: int
    oldest_run_at: datetime


@attrs.frozen
class JobsAvailable:
    """Hint: ``queue`` has runnable jobs (after an insert, promotion, or retry)."""

    queue: str


@attrs.frozen
class CancelRequested:
    """An operator cancelled the attempt ``lease``; its worker should stop the handler."""

    lease: Lease


@attrs.frozen
class CallbackResolved:
    """The external side answered the callback of attempt ``lease``."""

    lease: Lease


Event = JobsAvailable | CancelRequested | CallbackResolved
