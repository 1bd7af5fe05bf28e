"""Pure decisions: a job, what happened, and ``now`` in; the job's next value out.

Stores call these and persist the result; nothing here performs I/O or reads a clock. Every
state change goes through ``_move``, which asks the transition table.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from awa.domain import outcomes as o
from awa.domain import validation as v
from awa.domain.backoff import RandomSource, backoff_s
from awa.domain.defaults import DEADLINE_S, PRIORITY_RANGE, RETRY_REQUESTED, UNREADABLE_JOB
from awa.domain.errors import CallbackNotFound, ValidationError
from awa.domain.rescue import RescueCause
from awa.domain.states import JobState
from awa.domain.transitions import TRANSITIONS, IllegalTransition, Trigger, next_state
from awa.domain.validation import check_json_object, check_seconds
from awa.domain.values import DlqEntry, DlqReason, ErrorEntry, Job, NewJob

__all__ = [
    "DRAINABLE_STATES",
    "PLAIN_CLAIM_ORDER",
    "Decision",
    "cancel",
    "claim",
    "claim_order",
    "create_job",
    "create_jobs",
    "decided_alike",
    "effective_priority",
    "finish",
    "heartbeat",
    "heartbeat_callback",
    "is_claimable",
    "move_to_dlq",
    "operator_retry",
    "promote",
    "register_callback",
    "release",
    "rescue",
    "resolve_callback",
    "unreadable_failure",
    "unrestorable",
]


@attrs.frozen
class Decision:
    """The job's next value and what to record with it.

    ``dlq_reason`` is set whenever the job ends ``failed``: the store moves the job to the
    dead-letter queue with it when the job's queue has one enabled.
    """

    trigger: Trigger
    job: Job
    error: ErrorEntry | None = None
    dlq_reason: str | None = None

    def dead_letter_reason(self, dlq_enabled: bool) -> str | None:
        """Row 19: the reason to move the decided job to the dead-letter queue with, when its
        queue has one enabled; ``None`` keeps it in place. Only a decision that fails the job
        carries a reason."""
        return self.dlq_reason if dlq_enabled else None


def _move(job: Job, trigger: Trigger, **changes: Any) -> Job:
    return attrs.evolve(job, state=_require(job, trigger), **changes)


def _require(job: Job, trigger: Trigger) -> JobState:
    """The state the table moves ``job`` to; ``IllegalTransition`` naming the job if none."""
    try:
        return next_state(job.state, trigger)
    except IllegalTransition as refused:
        raise IllegalTransition(job.state, trigger, refused.allowed, job.id) from None


def _seconds_after(now: datetime, seconds: float) -> datetime:
    return now + timedelta(seconds=seconds)


def _merge(
    job: Job, progress: Mapping[str, Any] | None, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Buffered progress and metadata ride along with heartbeats and outcomes."""
    changes: dict[str, Any] = {}
    if progress is not None:
        changes["progress"] = check_json_object("progress", progress)
    if metadata:
        changes["metadata"] = {**job.metadata, **check_json_object("metadata", metadata)}
    return changes


_END_ATTEMPT: dict[str, Any] = {
    "deadline_at": None,
    "callback_id": None,
    "callback_timeout_at": None,
}


# -- producers and maintenance -------------------------------------------------------------


def create_job(new: NewJob, *, job_id: int, now: datetime) -> Job:
    """Row 1: ``scheduled`` when ``run_at`` is in the future, else ``available``."""
    run_at = new.run_at if new.run_at is not None else now
    return Job(
        id=job_id,
        kind=new.kind,
        queue=new.queue,
        args=new.args,
        state=JobState.SCHEDULED if run_at > now else JobState.AVAILABLE,
        priority=new.priority,
        attempt=0,
        max_attempts=new.max_attempts,
        run_lease=0,
        run_at=run_at,
        created_at=now,
        tags=new.tags,
        metadata=new.metadata,
        unique_key=new.unique_key_at(run_at),
        unique_states=new.unique.states if new.unique is not None else frozenset(),
        concurrency_key=new.concurrency_key,
        ordering_key=new.ordering_key,
    )


def create_jobs(news: Sequence[NewJob], *, job_ids: Sequence[int], now: datetime) -> list[Job]:
    """``create_job`` for each request with its id, in order. A run of requests of one shape
    (the same kind, queue, options, run_at and tags objects, no unique key, as
    ``NewJob.with_args`` makes them) shares one decision, made for its first request: the
    others take it with their own id, args and metadata."""
    jobs: list[Job] = []
    shared: dict[str, Any] | None = None
    first = None
    for new, job_id in zip(news, job_ids, strict=True):
        if shared is not None and first is not None and decided_alike(new, first):
            jobs.append(Job(id=job_id, args=new.args, metadata=new.metadata, **shared))
            continue
        job = create_job(new, job_id=job_id, now=now)
        jobs.append(job)
        first, shared = new, _decided_for_shape(job) if new.unique is None else None
    return jobs


def decided_alike(new: NewJob, first: NewJob) -> bool:
    """Whether ``create_job`` decides the same for both but for id, args and metadata: the
    same objects, so no value comparison can be fooled (``1 == True``, one instant in two
    zones)."""
    return (
        new.kind is first.kind
        and new.queue is first.queue
        and new.priority is first.priority
        and new.max_attempts is first.max_attempts
        and new.run_at is first.run_at
        and new.tags is first.tags
        and new.concurrency_key is first.concurrency_key
        and new.ordering_key is first.ordering_key
        and new.unique is None
    )


# what create_job decides from a request's shape, not its args or metadata
_SHAPE_DECIDED = (
    "kind",
    "queue",
    "state",
    "priority",
    "attempt",
    "max_attempts",
    "run_lease",
    "run_at",
    "created_at",
    "tags",
    "unique_key",
    "unique_states",
    "concurrency_key",
    "ordering_key",
)


def _decided_for_shape(job: Job) -> dict[str, Any]:
    return {name: getattr(job, name) for name in _SHAPE_DECIDED}


def is_claimable(job: Job, now: datetime) -> bool:
    """Runnable now, ignoring pause: available, or scheduled/retryable and due."""
    if job.state is JobState.AVAILABLE:
        return True
    return job.state in (JobState.SCHEDULED, JobState.RETRYABLE) and job.run_at <= now


def effective_priority(job: Job, now: datetime, aging_s: float = 0.0) -> int:
    """Priority aging: a runnable job's priority improves (its number drops) by one step per
    ``aging_s`` it has waited since its ``run_at``, down to the highest; 0 disables it. Computed
    when claiming: nothing is rewritten."""
    if not aging_s or job.run_at >= now:
        return job.priority
    steps = (now - job.run_at) // timedelta(microseconds=round(aging_s * 1_000_000))
    return max(PRIORITY_RANGE.start, job.priority - steps)


def claim_order(job: Job, now: datetime, aging_s: float = 0.0) -> tuple[int, datetime, int]:
    """Claim order: ``(effective priority, run_at, id)``, lowest first."""
    return (effective_priority(job, now, aging_s), job.run_at, job.id)


#: ``claim_order`` without priority aging, as a sort key (a claimed batch is sorted per job)
PLAIN_CLAIM_ORDER = operator.attrgetter("priority", "run_at", "id")


#: ``drain_queue`` cancels every job an operator can cancel that no attempt is running
DRAINABLE_STATES = tuple(
    state
    for state in JobState
    if state is not JobState.RUNNING and (state, Trigger.CANCEL) in TRANSITIONS
)


def promote(job: Job, now: datetime) -> Job:
    """Row 2."""
    if job.run_at > now:
        raise ValueError(f"job {job.id} is not due until {job.run_at.isoformat()}")
    return _move(job, Trigger.PROMOTE)


def claim(job: Job, now: datetime, deadline_duration_s: float = DEADLINE_S) -> Job:
    """Row 3 (promoting a due scheduled/retryable job first): a new attempt and a new lease."""
    check_seconds("deadline_duration", deadline_duration_s)
    if job.state in (JobState.SCHEDULED, JobState.RETRYABLE):
        job = promote(job, now)
    return _move(
        job,
        Trigger.CLAIM,
        attempt=job.attempt + 1,
        run_lease=job.run_lease + 1,
        attempted_at=now,
        heartbeat_at=now,
        deadline_at=_seconds_after(now, deadline_duration_s) if deadline_duration_s else None,
        callback_result=None,  # no callback of its own yet (an ended attempt left none pending)
    )


def rescue(job: Job, cause: RescueCause, now: datetime, rng: RandomSource) -> Decision:
    """Rows 14-16: end an attempt nobody finished. It spends the attempt (poison-job rule)."""
    _require(job, Trigger.RESCUE_RETRY)  # legality first: a refused rescue draws no jitter
    error = ErrorEntry(error=cause.error, attempt=job.attempt, at=now)
    errors = (*job.errors, error)
    if job.attempts_spent:
        failed = _move(job, Trigger.RESCUE_FAIL, errors=errors, finalized_at=now, **_END_ATTEMPT)
        return Decision(Trigger.RESCUE_FAIL, failed, error, cause.dlq_reason.value)
    run_at = _seconds_after(now, backoff_s(job.attempt, rng))
    retried = _move(job, Trigger.RESCUE_RETRY, errors=errors, run_at=run_at, **_END_ATTEMPT)
    return Decision(Trigger.RESCUE_RETRY, retried, error)


def unreadable_failure(job: Job) -> o.Fail:
    """Row 7 for a claimed job a column of which its store could not read back: no handler
    can be given it, and no later attempt would read it better, so it fails at once, its
    error naming each column and quoting what it holds (``Job.unreadable``)."""
    if not job.unreadable:
        raise ValueError(f"job {job.id} was read whole")
    said = "; ".join(str(column) for column in job.unreadable)
    return o.Fail(v.storable_text(f"{UNREADABLE_JOB}: {said}"), terminal=True)


def unrestorable(job: Job) -> ValidationError:
    """The refusal of row 20 for a dead letter a column of which its store could not read:
    restoring it would write what stands in for that column in place of what it holds."""
    said = "; ".join(str(column) for column in job.unreadable)
    return ValidationError(
        v.storable_text(
            f"job {job.id} cannot be retried from the dead-letter queue: {said}. Fix the"
            f" stored row or purge the entry (awa dlq purge {job.id})"
        )
    )


# -- the worker, fenced by its lease --------------------------------------------------------


def release(job: Job, now: datetime) -> Decision:
    """Row 22: the worker shuts down with the handler still running and gives the attempt up.
    It spends the attempt (poison-job rule) but is retried at once, with no backoff: the job
    did nothing wrong, its worker left."""
    cause = RescueCause.WORKER_SHUTDOWN
    error = ErrorEntry(error=cause.error, attempt=job.attempt, at=now)
    errors = (*job.errors, error)
    if job.attempts_spent:
        failed = _move(job, Trigger.RELEASE_FAIL, errors=errors, finalized_at=now, **_END_ATTEMPT)
        return Decision(Trigger.RELEASE_FAIL, failed, error, cause.dlq_reason.value)
    released = _move(job, Trigger.RELEASE_RETRY, errors=errors, run_at=now, **_END_ATTEMPT)
    return Decision(Trigger.RELEASE_RETRY, released, error)


def heartbeat(
    job: Job,
    now: datetime,
    progress: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Job:
    return _move(job, Trigger.HEARTBEAT, heartbeat_at=now, **_merge(job, progress, metadata))


def register_callback(job: Job, callback_id: str, timeout_s: float, now: datetime) -> Job:
    check_seconds("callback timeout", timeout_s, allow_zero=False)
    return _move(
        job,
        Trigger.REGISTER_CALLBACK,
        callback_id=callback_id,
        callback_timeout_at=_seconds_after(now, timeout_s),
        callback_result=None,
    )


def finish(
    job: Job,
    outcome: o.Outcome,
    now: datetime,
    rng: RandomSource,
    progress: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Decision:
    """Rows 4-10: apply a handler's outcome to the attempt that produced it.

    Raises ``CallbackNotFound`` for ``WaitForCallback`` when the token's callback is no longer
    pending (the external system answered first), and ``IllegalTransition`` when the job is
    not running; stores report both as a stale write.
    """
    extra = _merge(job, progress, metadata)
    if isinstance(outcome, o.Complete):
        done = _move(job, Trigger.COMPLETE, finalized_at=now, **{**extra, "progress": None})
        return Decision(Trigger.COMPLETE, attrs.evolve(done, **_END_ATTEMPT))
    if isinstance(outcome, o.Snooze):
        # the claim spent an attempt; a snooze gives it back, so the net change is zero
        snoozed = _move(
            job,
            Trigger.SNOOZE,
            attempt=job.attempt - 1,
            run_at=_seconds_after(now, outcome.seconds),
            **extra,
            **_END_ATTEMPT,
        )
        return Decision(Trigger.SNOOZE, snoozed)
    if isinstance(outcome, o.Cancel):
        error = ErrorEntry(error=outcome.reason, attempt=job.attempt, at=now)
        cancelled = _move(
            job,
            Trigger.CANCEL_BY_HANDLER,
            errors=(*job.errors, error),
            finalized_at=now,
            **extra,
            **_END_ATTEMPT,
        )
        return Decision(Trigger.CANCEL_BY_HANDLER, cancelled, error)
    if isinstance(outcome, o.WaitForCallback):
        if job.state is JobState.RUNNING and job.callback_id != outcome.token.callback_id:
            raise CallbackNotFound(outcome.token.callback_id)
        parked = _move(job, Trigger.WAIT_FOR_CALLBACK, **extra)
        return Decision(Trigger.WAIT_FOR_CALLBACK, parked)
    if isinstance(outcome, o.RetryAfter):
        return _fail_attempt(
            job,
            now,
            extra,
            f"{RETRY_REQUESTED} {outcome.seconds:g}s",
            retry_after_s=outcome.seconds,
            rng=rng,
        )
    return _fail_attempt(
        job,
        now,
        extra,
        outcome.error,
        terminal=outcome.terminal,
        traceback=outcome.traceback,
        rng=rng,
    )


def _fail_attempt(
    job: Job,
    now: datetime,
    extra: dict[str, Any],
    message: str,
    *,
    rng: RandomSource,
    terminal: bool = False,
    traceback: str | None = None,
    retry_after_s: float | None = None,
) -> Decision:
    """Rows 5-7: retry while attempts remain; fail at once when terminal or spent."""
    _require(job, Trigger.RETRY)  # legality first: a refused write draws no jitter
    error = ErrorEntry(message, job.attempt, now, terminal=terminal, traceback=traceback)
    errors = (*job.errors, error)
    if terminal or job.attempts_spent:
        reason = DlqReason.TERMINAL_ERROR if terminal else DlqReason.MAX_ATTEMPTS_EXHAUSTED
        failed = _move(job, Trigger.FAIL, errors=errors, finalized_at=now, **extra, **_END_ATTEMPT)
        return Decision(Trigger.FAIL, failed, error, reason.value)
    delay_s = retry_after_s if retry_after_s is not None else backoff_s(job.attempt, rng)
    retried = _move(
        job,
        Trigger.RETRY,
        errors=errors,
        run_at=_seconds_after(now, delay_s),
        **extra,
        **_END_ATTEMPT,
    )
    return Decision(Trigger.RETRY, retried, error)


# -- the external side of a callback --------------------------------------------------------

_RESOLUTION_TRIGGERS: dict[type[object], Trigger] = {
    o.ResumeCallback: Trigger.RESUME_CALLBACK,
    o.CompleteCallback: Trigger.COMPLETE_CALLBACK,
    o.FailCallback: Trigger.FAIL_CALLBACK,
    o.RetryCallback: Trigger.RETRY_CALLBACK,
}


def _pending_callback(job: Job, callback_id: str, trigger: Trigger) -> None:
    if job.callback_id != callback_id:
        raise CallbackNotFound(callback_id)
    try:
        next_state(job.state, trigger)
    except IllegalTransition:
        raise CallbackNotFound(callback_id) from None


def resolve_callback(
    job: Job, callback_id: str, resolution: o.Resolution, now: datetime
) -> Decision:
    """Rows 11-13. Exactly one resolution wins: each one clears the callback id, and any id
    that is not the job's pending one raises ``CallbackNotFound``."""
    trigger = _RESOLUTION_TRIGGERS[type(resolution)]
    _pending_callback(job, callback_id, trigger)
    cleared = {"callback_id": None, "callback_timeout_at": None}
    if isinstance(resolution, o.ResumeCallback):
        # The handler is still live: give it a fresh staleness window from now, and its whole
        # deadline again, since the time it spent parked was the external system's, not its.
        deadline_at = job.deadline_at
        if deadline_at is not None and job.attempted_at is not None:
            deadline_at = now + (deadline_at - job.attempted_at)
        resumed = _move(
            job,
            trigger,
            callback_result=resolution.payload,
            heartbeat_at=now,
            deadline_at=deadline_at,
            **cleared,
        )
        return Decision(trigger, resumed)
    if isinstance(resolution, o.CompleteCallback):
        done = _move(
            job,
            trigger,
            callback_result=resolution.payload,
            finalized_at=now,
            progress=None,
            **_END_ATTEMPT,
        )
        return Decision(trigger, done)
    if isinstance(resolution, o.FailCallback):
        error = ErrorEntry(resolution.error, job.attempt, now, terminal=True)
        failed = _move(job, trigger, errors=(*job.errors, error), finalized_at=now, **_END_ATTEMPT)
        return Decision(trigger, failed, error, DlqReason.TERMINAL_ERROR.value)
    restarted = _move(job, trigger, attempt=0, run_at=now, **_END_ATTEMPT)
    return Decision(trigger, restarted)


def heartbeat_callback(job: Job, callback_id: str, timeout_s: float, now: datetime) -> Job:
    """Extend a pending callback's deadline to ``now + timeout_s``."""
    check_seconds("callback timeout", timeout_s, allow_zero=False)
    if job.callback_id != callback_id:  # only a live attempt has one, and may extend it
        raise CallbackNotFound(callback_id)
    return _move(
        job, Trigger.HEARTBEAT_CALLBACK, callback_timeout_at=_seconds_after(now, timeout_s)
    )


# -- operators ------------------------------------------------------------------------------


def cancel(job: Job, now: datetime) -> Decision:
    """Row 17. A running attempt loses its lease's write rights at once."""
    cancelled = _move(job, Trigger.CANCEL, finalized_at=now, **_END_ATTEMPT)
    return Decision(Trigger.CANCEL, cancelled)


def operator_retry(job: Job, now: datetime, run_at: datetime | None = None) -> Job:
    """Rows 18 and 20: a fresh attempt budget; errors and ``run_lease`` are kept. With a
    ``run_at`` still ahead of ``now`` the job waits for it (``scheduled``); otherwise it is
    runnable at once."""
    if run_at is not None and run_at > now:
        return _move(job, Trigger.OPERATOR_RETRY_LATER, attempt=0, run_at=run_at, finalized_at=None)
    return _move(job, Trigger.OPERATOR_RETRY, attempt=0, run_at=now, finalized_at=None)


def move_to_dlq(job: Job, reason: str, now: datetime) -> DlqEntry:
    """Row 19: only a failed job enters the dead-letter queue."""
    if not reason:
        raise ValueError("a dead-letter reason is required")
    return DlqEntry(job=_move(job, Trigger.MOVE_TO_DLQ), reason=reason, dlq_at=now)
