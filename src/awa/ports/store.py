"""The claim store: every lifecycle verb a job queue needs, in the domain's words.

Rules every adapter keeps (the contract suite in ``awa.testing`` checks them):

* Legality comes from ``awa.domain.transitions.TRANSITIONS``; new values come from
  ``awa.domain.decisions``.
* Every write to a live attempt names its lease and matches ``(id, run_lease, state)``. When
  nothing matches, the write changes nothing and comes back as ``Stale``: a value, not an
  exception, because losing a race is expected.
* Operator verbs raise ``JobNotFound`` or ``IllegalTransition``; callback verbs raise
  ``CallbackNotFound``. Nothing changes when they raise.
* Time comes from the store's clock (PostgreSQL: the database's, unless one is injected).
* A ``failed`` outcome on a queue with the dead-letter queue enabled moves the job there: a
  job is in exactly one home, the jobs or the dead-letter queue.
* Batches are bounded: ``BATCH_SIZE_MAX`` per call.
* A job holds its unique key while it is in its unique states (``awa.domain.unique``); a move
  that would give a job a key another job holds (an insert, an operator's retry) raises
  ``UniqueConflict`` and changes nothing, or is answered with the holder (``on_conflict``).
* A periodic fire is enqueued in the same atomic step that moves its schedule on from the
  next fire the plan expected (a compare-and-set): a stale plan enqueues nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from awa.domain import (
    DlqEntry,
    FirePlan,
    Job,
    JobState,
    Lease,
    NewJob,
    OnConflict,
    Resolution,
    Schedule,
    ScheduleRecord,
)
from awa.domain.defaults import CALLBACK_TIMEOUT_S, DEADLINE_S, STALENESS_S
from awa.domain.flow import RateLimit
from awa.ports.clock import Clock
from awa.ports.listing import Home, JobSummary
from awa.ports.results import (
    Finish,
    FireRound,
    Heartbeat,
    QueueSettings,
    QueueStats,
    Rescued,
    WriteResult,
)
from awa.ports.unchanged import UNCHANGED, Unchanged

__all__ = [
    "BATCH_SIZE_MAX",
    "DEFAULT_DEADLINE_S",
    "DEFAULT_STALENESS_S",
    "CallbackStore",
    "ClaimStore",
    "MaintenanceStore",
    "OperatorStore",
    "ProducerStore",
    "WorkerStore",
]

BATCH_SIZE_MAX = 5000
DEFAULT_DEADLINE_S = DEADLINE_S
DEFAULT_STALENESS_S = STALENESS_S


class ProducerStore(Protocol):
    """What a producer needs: enqueue jobs, and cancel one by the unique key it holds."""

    def insert(self, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise") -> list[Job]:
        """Row 1, for every job at once; returns them with ids, in order. A job whose unique
        key another job holds (or an earlier job of the same call takes) refuses the whole
        call with ``UniqueConflict`` (``ValidationError`` for a repeat within the call), or,
        with ``on_conflict="skip"``, is answered with the holder and not written."""
        ...

    def cancel_by_unique_key(self, job: NewJob) -> Job | None:
        """Row 17 for the job holding the unique key ``job`` would take if inserted now (or at
        its ``run_at``); ``None`` when no job holds it. A holder that finished (its unique
        states include ``completed``) raises ``IllegalTransition``."""
        ...


class WorkerStore(Protocol):
    """What a worker needs for its attempts: claim them, and the fenced writes of a live one."""

    def claim(
        self,
        queue: str,
        *,
        limit: int,
        deadline_duration_s: float = DEFAULT_DEADLINE_S,
        priority_aging_s: float = 0.0,
    ) -> list[Job]:
        """Row 3 for up to ``limit`` runnable jobs of an unpaused queue, in
        ``(priority, run_at, id)`` order; due scheduled and retryable jobs count as runnable.
        With ``priority_aging_s`` the priority is the effective one
        (``decisions.effective_priority``). Each returned job carries its new lease. Concurrent
        claims never share a job."""
        ...

    def heartbeat(self, beats: Sequence[Heartbeat]) -> list[WriteResult]:
        """Extend each live attempt; results are in request order. A store may write a batch
        in parts, and raise ``PartlyWritten`` (with the results written) when one part could
        not be: a row held elsewhere delays only its own job's write."""
        ...

    def finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        """Rows 4-10 for each attempt; a finish for an attempt that ended is ``Stale``. Batches
        may be written in parts, as ``heartbeat``'s (``PartlyWritten``)."""
        ...

    def release(self, leases: Sequence[Lease]) -> list[WriteResult]:
        """Row 22 for each attempt a worker gives up as it shuts down with the handler still
        running: retried at once (or failed, attempts spent, with ``worker_shutdown``); a
        lease that no longer owns its job is ``Stale``."""
        ...


class CallbackStore(Protocol):
    """Callbacks: a running attempt registers one; the external side answers or extends it."""

    def register_callback(
        self, lease: Lease, *, timeout_s: float = CALLBACK_TIMEOUT_S, callback_id: str | None = None
    ) -> WriteResult:
        """Give a running attempt a pending callback (a fresh id unless one is given)."""
        ...

    def resolve_callback(self, callback_id: str, resolution: Resolution) -> Job:
        """Rows 11-13. At most one resolution per callback wins; the rest, and any unknown
        or stale id, raise ``CallbackNotFound``."""
        ...

    def heartbeat_callback(self, callback_id: str, *, timeout_s: float) -> Job:
        """Push a pending callback's timeout to ``now + timeout_s``."""
        ...


class MaintenanceStore(Protocol):
    """What the maintenance leader needs: rescue, promotion, retention, leadership and the
    periodic fires."""

    def rescue(
        self, *, staleness_s: float = DEFAULT_STALENESS_S, limit: int = 1000
    ) -> list[Rescued]:
        """Rows 14-16: end up to ``limit`` attempts whose heartbeat is older than
        ``staleness_s``, whose deadline passed, or whose callback timed out."""
        ...

    def promote(self, *, limit: int = 1000) -> list[Job]:
        """Row 2 for up to ``limit`` due scheduled and retryable jobs."""
        ...

    def delete_finished(
        self,
        *,
        older_than_s: float,
        failed_older_than_s: float | None = None,
        limit: int = 1000,
    ) -> int:
        """Retention: delete up to ``limit`` finished jobs (outside the dead-letter queue)
        past their retention (``awa.domain.retention``): completed jobs finalized longer ago
        than their queue's ``finished_retention_s``, or ``older_than_s`` on a queue without
        one; failed and cancelled jobs than its ``failed_retention_s``, or
        ``failed_older_than_s`` (``None``: ``older_than_s``). Oldest first within each
        retention; returns how many."""
        ...

    def expire_dlq(self, *, older_than_s: float, limit: int = 1000) -> int:
        """Row 21 by retention: delete up to ``limit`` dead-letter entries older than their
        queue's ``dlq_retention_s``, or ``older_than_s`` on a queue without one; returns how
        many."""
        ...

    def plan_fires(self, *, limit: int = 100) -> FireRound:
        """The fires due now (``awa.domain.periodic.plan_fires``) of up to ``limit`` schedules
        whose next fire is earliest, and when the next one after them comes. Reads only."""
        ...

    def fire(self, plan: FirePlan) -> list[Job] | None:
        """Insert the plan's jobs in the same atomic step that moves its schedule's next fire
        from ``plan.expected_next`` to ``plan.following``; ``None`` (nothing inserted) when the
        schedule moved on, was paused, changed timing or is gone. A fire whose unique key is
        held is skipped."""
        ...

    def try_lead(self, owner: str, *, ttl_s: float) -> bool:
        """Become (or stay) the one maintenance leader. True while ``owner`` leads; the
        leadership lapses when its holder stops renewing it for ``ttl_s`` (a dead holder
        stops renewing), or at once by ``release_lead``."""
        ...

    def release_lead(self, owner: str) -> None:
        """Give up leadership at once, if ``owner`` holds it."""
        ...


class OperatorStore(Protocol):
    """What an operator needs: read jobs, act on them, and manage queues, schedules and the
    dead-letter queue."""

    def get_job(self, job_id: int) -> Job:
        """The job from whichever home holds it; ``JobNotFound`` otherwise."""
        ...

    def list_jobs(
        self,
        *,
        state: JobState | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        tag: str | None = None,
        before_id: int | None = None,
    ) -> list[Job]:
        """Jobs outside the dead-letter queue, newest id first, holding ``tag`` when given;
        ``before_id`` pages on to the jobs older than it (pass the last id of the previous
        page)."""
        ...

    def list_job_summaries(
        self,
        *,
        home: Home = "jobs",
        state: JobState | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        tag: str | None = None,
        before_id: int | None = None,
    ) -> list[JobSummary]:
        """The jobs of ``home`` ("jobs": outside the dead-letter queue, as ``list_jobs``;
        "dlq": dead-lettered, as ``list_dlq``) that the filters match, newest id first and
        paged with ``before_id``, each as a ``JobSummary``: read without its args, metadata,
        progress or error history, so a page costs the same whatever the jobs carry."""
        ...

    def count_jobs(
        self,
        *,
        state: JobState | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> int:
        """How many jobs ``list_jobs`` would list with these filters and no limit."""
        ...

    def cancel(self, job_id: int) -> Job:
        """Row 17; a terminal job raises ``IllegalTransition`` (not cancellable)."""
        ...

    def retry(self, job_id: int, *, run_at: datetime | None = None) -> Job:
        """Row 18 (row 20 when the job is in the dead-letter queue): runnable now, or
        ``scheduled`` for a ``run_at`` still ahead."""
        ...

    def retry_failed(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[Job]:
        """Row 18 for every failed job (outside the dead-letter queue) matching, at ``run_at``
        as ``retry``; an empty filter needs ``all=True``. A job whose unique key another
        holds stays failed."""
        ...

    def discard_failed(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        """Delete every failed job (outside the dead-letter queue) matching; returns how many.
        An empty filter needs ``all=True``."""
        ...

    def drain_queue(self, queue: str) -> int:
        """Row 17 for every job of ``queue`` that no attempt is running (``decisions.drainable``);
        returns how many."""
        ...

    def pause_queue(self, queue: str) -> None: ...

    def resume_queue(self, queue: str) -> None: ...

    def configure_queue(
        self,
        queue: str,
        *,
        dlq_enabled: bool | None = None,
        finished_retention_s: float | None = None,
        dlq_retention_s: float | None = None,
        failed_retention_s: float | None = None,
        concurrency_limit: int | Unchanged | None = UNCHANGED,
        rate_limit: RateLimit | tuple[float, int] | Unchanged | None = UNCHANGED,
        key_concurrency_limit: int | Unchanged | None = UNCHANGED,
        key_rate_limit: RateLimit | tuple[float, int] | Unchanged | None = UNCHANGED,
    ) -> QueueSettings:
        """Store the settings given for ``queue`` and return all its settings.
        ``dlq_enabled``: whether ``failed`` outcomes move to the dead-letter queue; the
        retentions (completed jobs, failed and cancelled ones, dead-letter entries) override
        the maintenance leader's defaults for this queue (``None``: leave it as it is).
        ``concurrency_limit``: at most this many attempts of the queue live at once across
        the fleet; ``rate_limit``: ``(per_second, burst)``, a token bucket every attempt of
        the queue starts from; ``key_concurrency_limit`` and ``key_rate_limit``: the same for
        each ``concurrency_key`` of the queue apart, whose keys a claim then takes in turn
        (``None`` removes a limit; not given, it stays). A rate given again starts a full
        bucket. At least one setting must be given."""
        ...

    def set_dlq_enabled(self, queue: str, enabled: bool) -> None:
        """``configure_queue(queue, dlq_enabled=enabled)``."""
        ...

    def queue_stats(self) -> list[QueueStats]: ...

    # -- periodic schedules ------------------------------------------------------------------
    def register_schedules(self, schedules: Sequence[Schedule]) -> list[ScheduleRecord]:
        """Add or update these schedules (``periodic.register``): additive and idempotent,
        other schedules are left alone. Returns them as stored, in order."""
        ...

    def list_schedules(self) -> list[ScheduleRecord]:
        """Every schedule, by name."""
        ...

    def set_schedule_paused(self, name: str, paused: bool) -> ScheduleRecord:
        """Pause or resume (``periodic.set_paused``); ``ScheduleNotFound`` for an unknown name."""
        ...

    def trigger_schedule(self, name: str) -> Job:
        """Insert one run of the schedule's job now; the schedule does not move."""
        ...

    def remove_schedule(self, name: str) -> None:
        """Delete a schedule (a process that registers it again brings it back)."""
        ...

    # -- the dead-letter queue ---------------------------------------------------------------
    def move_to_dlq(self, job_id: int, *, reason: str) -> DlqEntry:
        """Row 19 by hand, for a failed job on a queue without automatic dead-lettering."""
        ...

    def list_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_id: int | None = None,
    ) -> list[DlqEntry]:
        """Dead-letter entries, newest job id first; ``before_id`` pages on."""
        ...

    def get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        """The dead-letter entry holding the job, or ``None`` when it is not dead-lettered."""
        ...

    def retry_from_dlq(self, job_id: int, *, run_at: datetime | None = None) -> Job:
        """Row 20: back to ``available`` (``scheduled`` for a ``run_at`` still ahead) with a
        fresh attempt budget, lease and errors kept. A dead letter a column of which cannot
        be read (``Job.unreadable``) is refused."""
        ...

    def bulk_retry_from_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[Job]:
        """Row 20 for every match, at ``run_at`` as ``retry_from_dlq``; an empty filter needs
        ``all=True`` (``ValidationError``). One that cannot be read stays where it is."""
        ...

    def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        """Row 21: delete matching entries, returning how many; an empty filter needs
        ``all=True``."""
        ...

    def purge_dlq_job(self, job_id: int) -> None:
        """Row 21 for one entry; ``JobNotFound`` when the job is not dead-lettered."""
        ...


class ClaimStore(
    ProducerStore, WorkerStore, CallbackStore, MaintenanceStore, OperatorStore, Protocol
):
    """The whole store: every role's verbs. A runtime service takes only its role's part."""

    @property
    def clock(self) -> Clock | None:
        """The clock the store tells time by, when this process can read it (an injected
        ``ManualClock``, the memory store's clock); ``None`` when the store keeps its own (the
        database's). A client runs its workers on it."""
        ...
