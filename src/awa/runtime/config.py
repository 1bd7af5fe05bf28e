"""Settings for a worker process, per queue and for the process as a whole."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from awa.domain import ValidationError
from awa.domain.flow_limits import FlowLimits, RateLimit, check_rate_limit
from awa.domain.retention import DLQ_RETENTION_S, FAILED_RETENTION_S, FINISHED_RETENTION_S
from awa.domain.validation import check_flag, check_queue, check_seconds, shown
from awa.domain.weights import check_global_max_workers, check_min_workers, check_weight
from awa.ports import BATCH_SIZE_MAX, DEFAULT_DEADLINE_S, DEFAULT_STALENESS_S

__all__ = [
    "CLAIMERS_MAX",
    "CONCURRENCY_DEFAULT",
    "CONCURRENCY_MAX",
    "QueueConfig",
    "RuntimeConfig",
    "queue_config_of",
]

CONCURRENCY_MAX = 10_000
#: A queue's handler slots when ``QueueConfig`` is given none. Claims are sized to free slots,
#: so this is also the largest claim: at 10 a no-op drain pays one claim round trip per 10 jobs
#: (about 5,500 jobs/s on a 2-core box), at 100 one per 100 (about 13,000). Idle async slots
#: cost nothing and handler threads are only started when needed (docs/performance.md).
CONCURRENCY_DEFAULT = 100
#: the most claims of one queue a process keeps in flight at once: past a few, more claims
#: only queue behind each other on the store's connections (upstream: "benchmark 2 or 4")
CLAIMERS_MAX = 16


def _concurrency(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= CONCURRENCY_MAX:
        raise ValidationError(
            f"concurrency must be an integer from 1 to {CONCURRENCY_MAX}, got {shown(value)}"
        )
    return value


def _workers(concurrency: int | None, max_workers: int | None) -> int:
    """The queue's slots, given as ``concurrency`` or by upstream's name ``max_workers``."""
    if concurrency is not None and max_workers is not None and concurrency != max_workers:
        raise ValidationError(
            f"give concurrency or max_workers (the same setting), not both: got concurrency"
            f" {shown(concurrency)} and max_workers {shown(max_workers)}"
        )
    given = concurrency if concurrency is not None else max_workers
    return CONCURRENCY_DEFAULT if given is None else _concurrency(given)


def _positive_int(name: str, value: object, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise ValidationError(f"{name} must be an integer from 1 to {high}, got {shown(value)}")
    return value


def _claimers(value: int) -> int:
    return _positive_int("claimers", value, CLAIMERS_MAX)


def _claim_batch_size(value: int | None) -> int | None:
    return None if value is None else _positive_int("claim_batch_size", value, BATCH_SIZE_MAX)


def _rate_limit(value: RateLimit | tuple[float, int] | None) -> RateLimit | None:
    return check_rate_limit("rate_limit", value)


def _concurrency_limit(value: int | None) -> int | None:
    return FlowLimits(concurrency_limit=value).concurrency_limit


def _retention(name: str, value: float | None) -> float | None:
    return None if value is None else check_seconds(name, value, allow_zero=False)


def _finished_retention(value: float | None) -> float | None:
    return _retention("finished_retention", value)


def _failed_retention(value: float | None) -> float | None:
    return _retention("failed_retention", value)


def _dlq_retention(value: float | None) -> float | None:
    return _retention("dlq_retention", value)


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


@attrs.frozen(init=False)
class QueueConfig:
    """How this process works one queue: ``QueueConfig("api", max_workers=20)``.

    The settings marked *stored* are the queue's, for every process working it: given here,
    they are stored with the queue (``configure_queue``) when the worker starts; ``None``
    leaves the stored setting as it is."""

    queue: str = attrs.field(converter=check_queue)
    #: this process's handler slots for the queue; ``max_workers`` is upstream's name for it
    concurrency: int = attrs.field(converter=_concurrency)
    deadline_duration_s: float = attrs.field(converter=_deadline_s)
    #: *stored*: route this queue's failures to the dead-letter queue
    dlq_enabled: bool | None = attrs.field(converter=_dlq_enabled)
    heartbeat_interval_s: float = attrs.field(converter=_interval_s)
    heartbeat_staleness_s: float = attrs.field(converter=_interval_s)
    poll_interval_s: float = attrs.field(converter=_interval_s)
    #: a job's priority improves by one step per this many seconds it waits (0: never)
    priority_aging_interval_s: float = attrs.field(converter=_aging_s)
    #: claim a few jobs ahead of free slots while handlers are short (as many as free up
    #: during one claim's round trip), so a freed slot does not wait for the database
    claim_ahead: bool = attrs.field(converter=_claim_ahead)
    #: with ``RuntimeConfig.global_max_workers`` (weighted queues, ``docs/weighted-queues.md``):
    #: the slots of the process's total that are this queue's alone, and its weight in the
    #: rest; ``concurrency`` stays its ceiling
    min_workers: int = attrs.field(converter=check_min_workers)
    weight: int = attrs.field(converter=check_weight)
    #: the most jobs one claim of this queue asks for (``None``: ``RuntimeConfig``'s
    #: ``claim_batch_max``; the smaller of the two bounds it)
    claim_batch_size: int | None = attrs.field(converter=_claim_batch_size)
    #: how many claims of this queue may be in flight at once in this process; together
    #: they never ask for more than its free slots and claim-ahead allowance
    claimers: int = attrs.field(converter=_claimers)
    #: *stored*: the fleet-wide flow limits (``docs/flow-control.md``)
    rate_limit: RateLimit | None = attrs.field(converter=_rate_limit)
    concurrency_limit: int | None = attrs.field(converter=_concurrency_limit)
    #: *stored*: the queue's own retention periods (``configure_queue``)
    finished_retention_s: float | None = attrs.field(converter=_finished_retention)
    failed_retention_s: float | None = attrs.field(converter=_failed_retention)
    dlq_retention_s: float | None = attrs.field(converter=_dlq_retention)

    def __init__(
        self,
        queue: str,
        *,
        concurrency: int | None = None,
        max_workers: int | None = None,
        deadline_duration_s: float = DEFAULT_DEADLINE_S,
        dlq_enabled: bool | None = None,
        heartbeat_interval_s: float = 30.0,
        heartbeat_staleness_s: float = DEFAULT_STALENESS_S,
        poll_interval_s: float = 1.0,
        priority_aging_interval_s: float = 0.0,
        claim_ahead: bool = True,
        min_workers: int = 0,
        weight: int = 1,
        claim_batch_size: int | None = None,
        claimers: int = 1,
        rate_limit: RateLimit | tuple[float, int] | None = None,
        concurrency_limit: int | None = None,
        finished_retention_s: float | None = None,
        failed_retention_s: float | None = None,
        dlq_retention_s: float | None = None,
    ) -> None:
        # written out (not attrs' own init) for the positional queue and the one setting's
        # two names; attrs.evolve passes every field back by its name, concurrency included
        self.__attrs_init__(
            queue=queue,
            concurrency=_workers(concurrency, max_workers),
            deadline_duration_s=deadline_duration_s,
            dlq_enabled=dlq_enabled,
            heartbeat_interval_s=heartbeat_interval_s,
            heartbeat_staleness_s=heartbeat_staleness_s,
            poll_interval_s=poll_interval_s,
            priority_aging_interval_s=priority_aging_interval_s,
            claim_ahead=claim_ahead,
            min_workers=min_workers,
            weight=weight,
            claim_batch_size=claim_batch_size,
            claimers=claimers,
            rate_limit=rate_limit,
            concurrency_limit=concurrency_limit,
            finished_retention_s=finished_retention_s,
            failed_retention_s=failed_retention_s,
            dlq_retention_s=dlq_retention_s,
        )

    @property
    def max_workers(self) -> int:
        """Upstream's name for ``concurrency``."""
        return self.concurrency

    def stored_settings(self) -> dict[str, Any]:
        """The *stored* settings given, as ``configure_queue`` takes them (empty: none)."""
        given = {
            "dlq_enabled": self.dlq_enabled,
            "rate_limit": self.rate_limit,
            "concurrency_limit": self.concurrency_limit,
            "finished_retention_s": self.finished_retention_s,
            "failed_retention_s": self.failed_retention_s,
            "dlq_retention_s": self.dlq_retention_s,
        }
        return {name: value for name, value in given.items() if value is not None}

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
                stacklevel=4,
            )


#: upstream's queue dict keys: the QueueConfig field each means, its unit's scale to ours
#: (ms, hours to seconds) and the field's check
_DICT_KEYS: dict[str, tuple[str, float, Callable[[Any], object]]] = {
    "max_workers": ("concurrency", 1.0, _concurrency),
    "min_workers": ("min_workers", 1.0, check_min_workers),
    "weight": ("weight", 1.0, check_weight),
    "rate_limit": ("rate_limit", 1.0, _rate_limit),
    "deadline_duration_ms": ("deadline_duration_s", 0.001, _deadline_s),
    "priority_aging_interval_ms": ("priority_aging_interval_s", 0.001, _aging_s),
    "claimers": ("claimers", 1.0, _claimers),
    "claim_batch_size": ("claim_batch_size", 1.0, _claim_batch_size),
}
_RETENTION_KEYS: dict[str, tuple[str, Callable[[Any], float | None]]] = {
    "completed_hours": ("finished_retention_s", _finished_retention),
    "failed_hours": ("failed_retention_s", _failed_retention),
}


def _in_unit(value: object, scale: float) -> object:
    """A number of milliseconds or hours as seconds; anything else as given, for the field's
    own check."""
    if scale == 1.0 or isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return value * scale


def queue_config_of(
    spec: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> QueueConfig:
    """Upstream's queue dict, ``{"name": q, "max_workers": 10, ...}``, as a ``QueueConfig``
    whose other fields are ``defaults`` (``start``'s keyword settings); a refusal names the
    key it is about."""
    if "name" not in spec:
        raise ValidationError(f"a queue config dict needs a 'name', got keys {sorted(spec)}")
    name = spec["name"]
    try:
        check_queue(name)
    except ValidationError as exc:
        raise ValidationError(f"queue config 'name': {exc}") from None
    settings: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "name":
            continue
        if key == "retention":
            settings.update(_retention_of(name, value))
            continue
        if key not in _DICT_KEYS:
            known = ", ".join(["name", *_DICT_KEYS, "retention"])
            raise ValidationError(f"queue {name}: unknown key {key!r} (known: {known})")
        field, scale, check = _DICT_KEYS[key]
        try:  # checked alone first, so that the refusal names the key the caller wrote
            checked = check(_in_unit(value, scale))
        except ValidationError as exc:
            said = str(exc)  # "claimers must be ...": the key already leads
            raise ValidationError(
                f"queue {name}: {said}" if said.startswith(key) else f"queue {name}: {key}: {said}"
            ) from None
        settings[field] = checked
    return QueueConfig(name, **{**(defaults or {}), **settings})


def _retention_of(queue: str, value: object) -> dict[str, float | None]:
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"queue {queue}: retention is a dict of completed_hours and/or failed_hours,"
            f" got {shown(value)}"
        )
    retention: dict[str, float | None] = {}
    for key, hours in value.items():
        if key not in _RETENTION_KEYS:
            raise ValidationError(
                f"queue {queue}: retention: unknown key {key!r} (known: completed_hours,"
                " failed_hours)"
            )
        field, check = _RETENTION_KEYS[key]
        try:
            retention[field] = check(_in_unit(hours, 3600.0))
        except ValidationError as exc:
            raise ValidationError(f"queue {queue}: retention {key}: {exc}") from None
    return retention


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
