"""Settings for a worker process, per queue and for the process as a whole."""

from __future__ import annotations

import warnings

import attrs

from awa.domain import ValidationError
from awa.domain.retention import DLQ_RETENTION_S, FAILED_RETENTION_S, FINISHED_RETENTION_S
from awa.domain.validation import check_flag, check_queue, check_seconds, shown
from awa.domain.weights import check_global_max_workers, check_min_workers, check_weight
from awa.ports import BATCH_SIZE_MAX, DEFAULT_DEADLINE_S, DEFAULT_STALENESS_S

__all__ = ["CONCURRENCY_DEFAULT", "CONCURRENCY_MAX", "QueueConfig", "RuntimeConfig"]

CONCURRENCY_MAX = 10_000
#: A queue's handler slots when ``QueueConfig`` is given none. Claims are sized to free slots,
#: so this is also the largest claim: at 10 a no-op drain pays one claim round trip per 10 jobs
#: (about 5,500 jobs/s on a 2-core box), at 100 one per 100 (about 13,000). Idle async slots
#: cost nothing and handler threads are only started when needed (docs/performance.md).
CONCURRENCY_DEFAULT = 100


def _concurrency(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= CONCURRENCY_MAX:
        raise ValidationError(
            f"concurrency must be an integer from 1 to {CONCURRENCY_MAX}, got {shown(value)}"
        )
    return value


def _dlq_enabled(value: bool | None) -> bool | None:
    return None if value is None else check_flag("dlq_enabled", value)


def _claim_ahead(value: bool) -> bool:
    return check_flag("claim_ahead", value)


def _deadline_s(value: float) -> float:
    return check_seconds("deadline_duration", value)


def _aging_s(value: float) -> float:
    return check_seconds("priority_aging_interval", value)


def _interval_s(value: float) -> float:
    return check_seconds("interval", value, allow_zero=False)


def _global_max_workers(value: int | None) -> int | None:
    return None if value is None else check_global_max_workers(value)


def _summary_interval_s(value: float) -> float:
    return check_seconds("queue_summary_interval_s", value)


@attrs.frozen(kw_only=True)
class QueueConfig:
    """How this process works one queue."""

    queue: str = attrs.field(converter=check_queue)
    concurrency: int = attrs.field(default=CONCURRENCY_DEFAULT, converter=_concurrency)
    deadline_duration_s: float = attrs.field(default=DEFAULT_DEADLINE_S, converter=_deadline_s)
    #: route this queue's failures to the dead-letter queue (stored with the queue, for every
    #: process); ``None`` leaves the stored setting as it is
    dlq_enabled: bool | None = attrs.field(default=None, converter=_dlq_enabled)
    heartbeat_interval_s: float = attrs.field(default=30.0, converter=_interval_s)
    heartbeat_staleness_s: float = attrs.field(default=DEFAULT_STALENESS_S, converter=_interval_s)
    poll_interval_s: float = attrs.field(default=1.0, converter=_interval_s)
    #: a job's priority improves by one step per this many seconds it waits (0: never)
    priority_aging_interval_s: float = attrs.field(default=0.0, converter=_aging_s)
    #: claim a few jobs ahead of free slots while handlers are short (as many as free up
    #: during one claim's round trip), so a freed slot does not wait for the database
    claim_ahead: bool = attrs.field(default=True, converter=_claim_ahead)
    #: with ``RuntimeConfig.global_max_workers`` (weighted queues, ``docs/weighted-queues.md``):
    #: the slots of the process's total that are this queue's alone, and its weight in the
    #: rest; ``concurrency`` stays its ceiling
    min_workers: int = attrs.field(default=0, converter=check_min_workers)
    weight: int = attrs.field(default=1, converter=check_weight)

    def __attrs_post_init__(self) -> None:
        if self.min_workers > self.concurrency:
            raise ValidationError(
                f"queue {self.queue}: min_workers {self.min_workers} is more than its"
                f" concurrency {self.concurrency}"
            )
        if self.heartbeat_staleness_s < 3 * self.heartbeat_interval_s:
            warnings.warn(
                f"queue {self.queue}: heartbeat_staleness {self.heartbeat_staleness_s:g}s is less"
                f" than 3x the heartbeat interval {self.heartbeat_interval_s:g}s; a busy worker"
                " may be presumed dead",
                stacklevel=3,
            )


@attrs.frozen(kw_only=True)
class RuntimeConfig:
    """Process-wide settings: maintenance cadence, retention and batch bounds."""

    maintenance_interval_s: float = attrs.field(default=5.0, converter=_interval_s)
    deadline_grace_s: float = attrs.field(default=1.0, converter=_interval_s)
    #: completed jobs, failed and cancelled ones outside the dead-letter queue, and dead-letter
    #: entries are deleted after these, on queues without their own (``awa.domain.retention``)
    finished_retention_s: float = attrs.field(default=FINISHED_RETENTION_S, converter=_interval_s)
    failed_retention_s: float = attrs.field(default=FAILED_RETENTION_S, converter=_interval_s)
    dlq_retention_s: float = attrs.field(default=DLQ_RETENTION_S, converter=_interval_s)
    #: how often the leader counts every queue into the store's summary (the dashboard's and
    #: the metrics' counts, ``awa.ports.SummarizesQueues``); 0: never
    queue_summary_interval_s: float = attrs.field(default=10.0, converter=_summary_interval_s)
    #: a store call still running after this is abandoned and its service tries again
    store_call_timeout_s: float = attrs.field(default=60.0, converter=_interval_s)
    #: an event loop that has not turned for this long is logged (once), naming the job
    loop_block_warning_s: float = attrs.field(default=1.0, converter=_interval_s)
    #: share this many handler slots among the queues by their ``min_workers`` and ``weight``
    #: (``awa.domain.weights``); ``None``: each queue has its own ``concurrency``
    global_max_workers: int | None = attrs.field(default=None, converter=_global_max_workers)
    claim_batch_max: int = 1000
    finish_batch_max: int = 1000
    maintenance_batch_max: int = 1000
    run_maintenance: bool = True

    def __attrs_post_init__(self) -> None:
        for name in ("claim_batch_max", "finish_batch_max", "maintenance_batch_max"):
            value = getattr(self, name)
            if not 1 <= value <= BATCH_SIZE_MAX:
                raise ValidationError(f"{name} must be from 1 to {BATCH_SIZE_MAX}, got {value}")
