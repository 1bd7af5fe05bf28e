"""What a worker process tells the outside world as it works: one ``Observer`` interface, and
the values it passes.

The runtime calls every observer it was given at each event below, on the event loop (never
while holding a store call), so an observer must be quick and must not raise: a failing
observer is logged and the others still hear the event. The per-attempt log lines
(``awa.runtime.logs``) and the metrics (``awa.metrics``) are observers; so is anything a team
adds (``start(..., observers=[...])``).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

import attrs

from awa.domain import Job, JobState, Lease
from awa.ports import QueueStats, Rescued, StaleReason

__all__ = ["AttemptEnd", "Ending", "MaintenanceReport", "Observer", "Observers"]

log = logging.getLogger("awa.runtime")


@attrs.frozen
class MaintenanceReport:
    """One maintenance round: whether this process led it, and what it did."""

    leader: bool
    rescued: int = 0
    promoted: int = 0
    deleted: int = 0
    expired: int = 0
    more: bool = False


class Ending(str, enum.Enum):
    """How one attempt ended, as this worker saw it written (or refused)."""

    COMPLETED = "completed"
    RETRIED = "retried"  # failed, attempts remain: retryable
    FAILED = "failed"  # failed for good (terminal error, or attempts spent)
    SNOOZED = "snoozed"
    CANCELLED = "cancelled"  # by the handler, or from outside while it ran
    WAITING = "waiting"  # parked on a callback
    RELEASED = "released"  # the worker shut down before the handler returned
    STALE = "stale"  # the attempt had lost its job: its outcome was refused
    DROPPED = "dropped"  # past its deadline: the handler was given up

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of(cls, state: JobState) -> Ending:
        """The ending a written outcome's new state stands for."""
        return _BY_STATE[state]


_BY_STATE = {
    JobState.COMPLETED: Ending.COMPLETED,
    JobState.RETRYABLE: Ending.RETRIED,
    JobState.FAILED: Ending.FAILED,
    JobState.SCHEDULED: Ending.SNOOZED,
    JobState.CANCELLED: Ending.CANCELLED,
    JobState.WAITING_EXTERNAL: Ending.WAITING,
    JobState.RUNNING: Ending.WAITING,  # answered before the park: still the same attempt
    JobState.AVAILABLE: Ending.RETRIED,  # a callback retry restarted it
}


class AttemptEnd(NamedTuple):
    """One ended attempt: which job, how it ended, how long its handler ran, and the error
    recorded for it (``None`` when it ended without one). ``stale_reason`` says why the
    attempt had lost its job: for ``STALE``, why its outcome was refused; for ``CANCELLED``,
    ``StaleReason.CANCELLED`` when the job was cancelled while its handler ran (``None`` when
    the handler cancelled it).

    An immutable ``NamedTuple`` rather than a frozen attrs class: a busy worker makes one per
    ended attempt for its observers, and a frozen attrs class costs twice as much to build."""

    lease: Lease
    kind: str
    queue: str
    attempt: int
    max_attempts: int
    ending: Ending
    handler_s: float
    error: str | None = None
    stale_reason: StaleReason | None = None
    job: Job | None = None  # the job as written (None when the outcome was refused)

    @property
    def job_id(self) -> int:
        return self.lease.job_id

    @property
    def error_type(self) -> str | None:
        """``ValueError`` of ``ValueError: bad row``; ``None`` for the lifecycle's own texts."""
        if self.error is None or ": " not in self.error:
            return None
        head = self.error.split(": ", 1)[0]
        return head if head.isidentifier() else None


class Observer:
    """Every event a worker reports; override the ones you need (each does nothing here)."""

    #: set to read every queue's depth each maintenance round this process leads
    wants_queue_stats: bool = False

    def hears(self, ending: Ending) -> bool:
        """Whether ``attempt_ended`` wants attempts that ended so (asked first, so that a busy
        worker builds no ``AttemptEnd`` nobody reads)."""
        return True

    def worker_handles(self, kinds: Mapping[str, str]) -> None:
        """The kinds this worker has handlers for, each with the queue its task is registered
        on (heard just before ``worker_started``): every other kind it meets is job data."""

    def worker_started(self, owner: str, queues: Sequence[str]) -> None:
        """The runtime attached to its store and is about to claim."""

    def worker_stopped(self, owner: str, released: int) -> None:
        """The runtime stopped; ``released`` attempts were still running and were released."""

    def claimed(self, queue: str, jobs: Sequence[Job], now: datetime) -> None:
        """One claim took ``jobs`` (possibly none) of ``queue`` at ``now`` (the worker's
        clock); each job's wait is ``job.attempted_at - job.run_at`` on the store's clock."""

    def claims_held_back(self, queue: str, held: Mapping[str, int]) -> None:
        """Claims of ``queue`` left jobs waiting that its flow limits held back: how many
        since last heard, by reason (``awa.domain.flow.HOLD_REASONS``), each job once a claim
        under the first reason that held it. Heard only on a store that counts them
        (``awa.ports.CountsHeldBack``)."""

    def attempt_ended(self, end: AttemptEnd) -> None:
        """An attempt's outcome was written (or refused as stale), or it was given up."""

    def maintained(self, report: MaintenanceReport, rescued: Sequence[Rescued]) -> None:
        """One maintenance round ran; ``report.leader`` says whether this process led it."""

    def leadership_changed(self, owner: str, leading: bool) -> None:
        """This process took (or lost) the maintenance leadership."""

    def queues_measured(self, stats: Sequence[QueueStats], now: datetime) -> None:
        """The leader read every queue's depth (once per maintenance round it leads)."""


class Observers(Observer):
    """Several observers heard as one; one that raises is logged and the rest still hear."""

    def __init__(self, observers: Sequence[Observer] = ()) -> None:
        self._observers: list[Observer] = []
        for observer in observers:
            self.add(observer)

    def add(self, observer: Observer) -> None:
        self._observers.append(observer)
        self.wants_queue_stats = self.wants_queue_stats or observer.wants_queue_stats

    def __bool__(self) -> bool:
        return bool(self._observers)

    def _each(self, event: str, *args: object) -> None:
        for observer in self._observers:
            try:
                getattr(observer, event)(*args)
            except Exception:
                log.exception("observer %s failed on %s", type(observer).__name__, event)

    def worker_handles(self, kinds: Mapping[str, str]) -> None:
        self._each("worker_handles", kinds)

    def worker_started(self, owner: str, queues: Sequence[str]) -> None:
        self._each("worker_started", owner, queues)

    def worker_stopped(self, owner: str, released: int) -> None:
        self._each("worker_stopped", owner, released)

    def claimed(self, queue: str, jobs: Sequence[Job], now: datetime) -> None:
        self._each("claimed", queue, jobs, now)

    def claims_held_back(self, queue: str, held: Mapping[str, int]) -> None:
        self._each("claims_held_back", queue, held)

    def hears(self, ending: Ending) -> bool:
        # a loop, not any(genexpr): asked once per attempt, the generator costs a busy worker
        for observer in self._observers:  # noqa: SIM110
            if observer.hears(ending):
                return True
        return False

    def heard(self) -> frozenset[Ending]:
        """The endings some observer hears, for a batch of attempts to ask once."""
        return frozenset(ending for ending in Ending if self.hears(ending))

    def attempt_ended(self, end: AttemptEnd) -> None:
        for observer in self._observers:
            if observer.hears(end.ending):
                try:
                    observer.attempt_ended(end)
                except Exception:
                    log.exception("observer %s failed on attempt_ended", type(observer).__name__)

    def maintained(self, report: MaintenanceReport, rescued: Sequence[Rescued]) -> None:
        self._each("maintained", report, rescued)

    def leadership_changed(self, owner: str, leading: bool) -> None:
        self._each("leadership_changed", owner, leading)

    def queues_measured(self, stats: Sequence[QueueStats], now: datetime) -> None:
        self._each("queues_measured", stats, now)
