"""The arguments of every ``ClaimStore`` verb, checked once, before a store does any work.

``awa.adapters.StoreCore`` calls the check of each verb first, so every adapter built on it
refuses the same inputs in the same words (the contract's refusals table holds them all). A
refusal is one ``ValidationError`` sentence and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import attrs

from awa.domain import FirePlan, Job, Lease, NewJob, Schedule, ValidationError
from awa.domain.flow import FlowLimits, RateLimit, check_rate_limit
from awa.domain.outcomes import (
    Cancel,
    Complete,
    CompleteCallback,
    Fail,
    FailCallback,
    ResumeCallback,
    RetryAfter,
    RetryCallback,
    Snooze,
    WaitForCallback,
)
from awa.domain.periodic import check_schedule_name
from awa.domain.states import JobState
from awa.domain.unique import OnConflict, check_on_conflict
from awa.domain.validation import (
    check_flag,
    check_id,
    check_instant,
    check_json_object,
    check_kind,
    check_queue,
    check_seconds,
    check_state,
    check_tags,
    check_text,
    shown,
)
from awa.ports.listing import HOMES, Home
from awa.ports.results import Event, Finish, Heartbeat
from awa.ports.store import BATCH_SIZE_MAX
from awa.ports.unchanged import UNCHANGED, Unchanged

__all__ = [
    "CheckedSettings",
    "check_batch",
    "check_before_id",
    "check_bulk_filter",
    "check_callback_id",
    "check_claim",
    "check_dlq_filter",
    "check_finishes",
    "check_fire_plan",
    "check_heartbeats",
    "check_home",
    "check_insert",
    "check_job_id",
    "check_lease",
    "check_leases",
    "check_limit",
    "check_list_filter",
    "check_listener",
    "check_new_jobs",
    "check_owner",
    "check_queue_settings",
    "check_reason",
    "check_register_callback",
    "check_resolution",
    "check_retention",
    "check_retry_at",
    "check_schedule_name",
    "check_schedules",
    "check_streamed_count",
    "check_unique_job",
    "check_worker_kinds",
    "refuse_unfiltered",
]

T = TypeVar("T")

_OUTCOMES = (Complete, RetryAfter, Snooze, Cancel, WaitForCallback, Fail)

CALLBACK_ID_LENGTH_MAX = 256
OWNER_LENGTH_MAX = 200
WORKER_QUEUES_MAX = 1000
WORKER_KINDS_MAX = 10_000


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= BATCH_SIZE_MAX:
        raise ValidationError(
            f"limit must be an integer from 1 to {BATCH_SIZE_MAX}, got {shown(limit)}"
        )
    return limit


def check_batch(items: Sequence[T], what: str, kind: type[object]) -> Sequence[T]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise ValidationError(f"{what} come as a list, got {type(items).__name__}")
    if len(items) > BATCH_SIZE_MAX:
        raise ValidationError(f"at most {BATCH_SIZE_MAX} {what} per call, got {len(items)}")
    for item in items:
        if not isinstance(item, kind):
            raise ValidationError(f"expected {kind.__name__} values, got {type(item).__name__}")
    return items


def check_new_jobs(jobs: Sequence[NewJob]) -> Sequence[NewJob]:
    """``insert``: a bounded list of ``NewJob`` values (each validated itself when made)."""
    return check_batch(jobs, "jobs", NewJob)


def check_insert(jobs: Sequence[NewJob], on_conflict: object) -> OnConflict:
    """``insert``: the jobs, and what to do with one whose unique key is held."""
    check_new_jobs(jobs)
    return check_on_conflict(on_conflict)


def check_streamed_count(count: object) -> int:
    """``insert_streamed``: how many jobs the chunks make, at least two (one job is a single
    insert) and at most a batch."""
    if isinstance(count, bool) or not isinstance(count, int) or not 2 <= count <= BATCH_SIZE_MAX:
        raise ValidationError(
            f"a streamed insert takes 2 to {BATCH_SIZE_MAX} jobs, got {shown(count)}"
        )
    return count


def check_unique_job(job: object) -> NewJob:
    """``cancel_by_unique_key``: the job whose key to look for, which must have one."""
    if not isinstance(job, NewJob):
        raise ValidationError(f"expected NewJob values, got {type(job).__name__}")
    if job.unique is None:
        raise ValidationError("the job has no unique key: give it unique=awa.Unique(...)")
    return job


def check_schedules(schedules: Sequence[Schedule]) -> Sequence[Schedule]:
    """``register_schedules``: a bounded list of schedules, each name once."""
    check_batch(schedules, "schedules", Schedule)
    names = [s.name for s in schedules]
    if len(set(names)) != len(names):
        raise ValidationError(f"a schedule name is given twice: {sorted(names)}")
    return schedules


def check_fire_plan(plan: object) -> FirePlan:
    if not isinstance(plan, FirePlan):
        raise ValidationError(f"expected a FirePlan, got {type(plan).__name__}")
    if not plan.fires or len(plan.fires) != len(plan.jobs):
        raise ValidationError("a fire plan has one job per fire, and at least one fire")
    return plan


def check_before_id(before_id: object) -> int | None:
    """A page's cursor: the last id of the previous page (``None``: the first page)."""
    return None if before_id is None else check_job_id(before_id)


def check_job_id(job_id: object) -> int:
    return check_id("a job id", job_id)


def check_lease(lease: object) -> Lease:
    if not isinstance(lease, Lease):
        raise ValidationError(f"expected a Lease, got {type(lease).__name__}")
    check_id("a lease's job_id", lease.job_id)
    check_id("a lease's run_lease", lease.run_lease)
    return lease


def check_listener(listener: object) -> Callable[[Event], None]:
    """``subscribe``: something to call with each hint."""
    if not callable(listener):
        raise ValidationError(f"a listener is a callable, got {type(listener).__name__}")
    return listener


def check_callback_id(callback_id: object) -> str:
    """A callback id as the external side sends it back: non-empty text, not too long."""
    return check_text("callback id", callback_id, length_max=CALLBACK_ID_LENGTH_MAX)


def check_owner(owner: object) -> str:
    """Who leads maintenance: non-empty text naming a process."""
    return check_text("a leader", owner, length_max=OWNER_LENGTH_MAX)


def check_worker_kinds(kinds: object) -> dict[str, tuple[str, ...]]:
    """What a worker records of itself: queue -> the kinds it handles there, bounded."""
    if not isinstance(kinds, Mapping):
        raise ValidationError(
            f"a worker's kinds come as a mapping of queue to kinds, got {shown(kinds)}"
        )
    if len(kinds) > WORKER_QUEUES_MAX:
        raise ValidationError(f"a worker records at most {WORKER_QUEUES_MAX} queues")
    checked: dict[str, tuple[str, ...]] = {}
    for queue, names in kinds.items():
        if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
            raise ValidationError(
                f"the kinds of queue {shown(queue)} come as a list, got {shown(names)}"
            )
        if len(names) > WORKER_KINDS_MAX:
            raise ValidationError(f"a worker records at most {WORKER_KINDS_MAX} kinds a queue")
        checked[check_queue(queue)] = tuple(sorted({check_kind(name) for name in names}))
    return checked


def check_reason(reason: object) -> str:
    """A dead-letter reason an operator gives."""
    return check_text("a dead-letter reason", reason)


def check_leases(leases: Sequence[Lease]) -> Sequence[Lease]:
    """``release``: a bounded list of leases."""
    check_batch(leases, "leases", Lease)
    for lease in leases:
        check_lease(lease)
    return leases


def check_claim(
    queue: object, limit: object, deadline_duration_s: object, priority_aging_s: object
) -> None:
    check_queue(queue)
    check_limit(limit)
    check_seconds("deadline_duration", deadline_duration_s)
    check_seconds("priority_aging_interval", priority_aging_s)


def check_register_callback(lease: object, timeout_s: object, callback_id: object) -> None:
    check_lease(lease)
    check_seconds("callback timeout", timeout_s, allow_zero=False)
    if callback_id is not None:
        check_callback_id(callback_id)


def check_resolution(callback_id: object, resolution: object) -> None:
    check_callback_id(callback_id)
    if not isinstance(resolution, (ResumeCallback, CompleteCallback, FailCallback, RetryCallback)):
        raise ValidationError(
            "a callback is answered with ResumeCallback, CompleteCallback, FailCallback or"
            f" RetryCallback, got {type(resolution).__name__}"
        )


def check_retention(
    older_than_s: object, limit: object, failed_older_than_s: object = None
) -> None:
    """``delete_finished`` and ``expire_dlq``: ages (``failed_older_than_s`` may be ``None``)
    and a batch."""
    check_seconds("older_than", older_than_s)
    if failed_older_than_s is not None:
        check_seconds("failed_older_than", failed_older_than_s)
    check_limit(limit)


def check_retry_at(run_at: object) -> datetime | None:
    """An operator retry's ``run_at``: ``None`` (now), or an instant within the bounds every
    store keeps (``awa.domain.validation.check_instant``)."""
    return None if run_at is None else check_instant("run_at", run_at)


def check_queue_settings(
    queue: object,
    dlq_enabled: object,
    finished_retention_s: object,
    dlq_retention_s: object,
    failed_retention_s: object = None,
    concurrency_limit: object = UNCHANGED,
    rate_limit: object = UNCHANGED,
    *,
    key_concurrency_limit: object = UNCHANGED,
    key_rate_limit: object = UNCHANGED,
) -> CheckedSettings:
    """``configure_queue``: a queue and at least one setting; ``None`` leaves a retention or
    ``dlq_enabled`` as it is, ``UNCHANGED`` a flow limit. Returns the settings as checked: a
    retention to the microsecond, as every store keeps it."""
    check_queue(queue)
    if dlq_enabled is not None:
        check_flag("dlq_enabled", dlq_enabled)
    retentions = (
        ("finished_retention", finished_retention_s),
        ("failed_retention", failed_retention_s),
        ("dlq_retention", dlq_retention_s),
    )
    finished, failed, dead = (
        None if seconds is None else check_seconds(name, seconds, allow_zero=False)
        for name, seconds in retentions
    )
    checked = CheckedSettings(
        concurrency_limit
        if concurrency_limit is UNCHANGED
        else FlowLimits(concurrency_limit=concurrency_limit).concurrency_limit,
        rate_limit if rate_limit is UNCHANGED else check_rate_limit("rate_limit", rate_limit),
        key_concurrency_limit
        if key_concurrency_limit is UNCHANGED
        else FlowLimits(key_concurrency_limit=key_concurrency_limit).key_concurrency_limit,
        key_rate_limit
        if key_rate_limit is UNCHANGED
        else check_rate_limit("key_rate_limit", key_rate_limit),
        finished_retention_s=finished,
        failed_retention_s=failed,
        dlq_retention_s=dead,
    )
    if dlq_enabled is None and checked == CheckedSettings():
        raise ValidationError(
            "nothing to configure: give dlq_enabled, finished_retention_s, failed_retention_s,"
            " dlq_retention_s, concurrency_limit, rate_limit, key_concurrency_limit or"
            " key_rate_limit"
        )
    return checked


@attrs.frozen
class CheckedSettings:
    """The settings a ``configure_queue`` call gives, checked: a flow limit ``UNCHANGED``
    where it gives none, ``None`` where it removes one; a retention ``None`` where it gives
    none, else the seconds a store keeps (to the microsecond)."""

    concurrency_limit: int | Unchanged | None = UNCHANGED
    rate_limit: RateLimit | Unchanged | None = UNCHANGED
    key_concurrency_limit: int | Unchanged | None = UNCHANGED
    key_rate_limit: RateLimit | Unchanged | None = UNCHANGED
    finished_retention_s: float | None = None
    failed_retention_s: float | None = None
    dlq_retention_s: float | None = None


def check_list_filter(
    state: object,
    kind: object,
    queue: object,
    limit: object,
    *,
    tag: object = None,
    before_id: object = None,
) -> JobState | None:
    """``list_jobs``'s filters; the state as a ``JobState``."""
    checked = check_state(state) if state is not None else None
    check_dlq_filter(queue, kind, all=True)
    check_limit(limit)
    if tag is not None:
        check_tags([tag])
    check_before_id(before_id)
    return checked


def check_home(home: object) -> Home:
    """Which home of a job to list: ``"jobs"`` or ``"dlq"``."""
    for known in HOMES:
        if home == known and type(home) is str:
            return known
    raise ValidationError(f"home must be one of {', '.join(HOMES)}, got {repr(home)[:40]}")


def refuse_unfiltered(
    queue: object,
    kind: object,
    all: object,
    *,
    verb: str,
    what: str,
    how: str,
    error: Callable[[str], Exception] = ValidationError,
) -> None:
    """The one rule of every bulk verb: it acts on a queue, a kind, or (only when asked) every
    one of ``what``. Each front end says ``how`` to give a filter in its own terms (``all=True``,
    ``--all``, the dashboard's "every queue and kind") and may raise its own ``error``."""
    if queue is None and kind is None and not all:
        raise error(f"refusing to {verb} every {what}: {how}")


def check_bulk_filter(queue: Any, kind: Any, all: object, what: str) -> None:
    """Bulk commands act on a queue, a kind, or (only when asked) every one of ``what``."""
    check_flag("all", all)
    if queue is not None:
        check_queue(queue)
    if kind is not None:
        check_kind(kind)
    refuse_unfiltered(
        queue, kind, all, verb="act on", what=what, how="give a queue or kind, or all=True"
    )


def check_dlq_filter(queue: Any, kind: Any, all: object) -> None:
    """Bulk dead-letter commands act on a queue, a kind, or (only when asked) everything."""
    check_bulk_filter(queue, kind, all, "dead-letter entry")


def _check_buffers(items: Sequence[Heartbeat] | Sequence[Finish]) -> None:
    for item in items:
        check_lease(item.lease)
        if item.progress is not None:
            check_json_object("progress", item.progress)
        if item.metadata is not None:
            check_json_object("metadata", item.metadata)


def check_heartbeats(beats: Sequence[Heartbeat]) -> Sequence[Heartbeat]:
    """Every beat, before any is written: a bad one refuses the whole call."""
    check_batch(beats, "heartbeats", Heartbeat)
    _check_buffers(beats)
    return beats


def check_finishes(finishes: Sequence[Finish]) -> Sequence[Finish]:
    """Every finish, before any is written: a bad one refuses the whole call, and the runtime
    splits the batch to find it (an outcome validates itself when it is made)."""
    check_batch(finishes, "finishes", Finish)
    _check_buffers(finishes)
    for finish in finishes:
        if not isinstance(finish.outcome, _OUTCOMES):
            raise ValidationError(
                "a finish's outcome is Complete, RetryAfter, Snooze, Cancel, WaitForCallback"
                f" or Fail, got {type(finish.outcome).__name__}"
            )
        claimed, lease = finish.claimed, finish.lease
        if claimed is not None and (
            not isinstance(claimed, Job)
            or claimed.id != lease.job_id
            or claimed.run_lease != lease.run_lease
        ):
            raise ValidationError("a finish's claimed job must be the Job that holds its lease")
    return finishes
