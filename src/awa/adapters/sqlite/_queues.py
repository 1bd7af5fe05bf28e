"""A queue's row in ``awa_queues``: its settings (the part ``settings_columns``) to a
``QueueSettings`` and back, and its flow limits, bucket and turn cursor (``queue_flow.sql``) to
the ``QueueFlow`` a claim decides under. Retentions are stored in whole microseconds, the bucket's
time as every time of this store (``_rows.micros``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from awa.adapters.core import QueueFlow
from awa.adapters.sqlite._rows import time_of
from awa.domain.flow import Bucket, FlowLimits, RateLimit
from awa.ports import QueueSettings

__all__ = ["flow_of", "seconds_of", "settings_of", "settings_params", "us_of"]


def seconds_of(stored_us: int | None) -> float | None:
    return None if stored_us is None else stored_us / 1_000_000


def us_of(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1_000_000)


def _rate(per_second: float | None, burst: int | None) -> RateLimit | None:
    # both or neither: the queues_rate_pair constraint
    return None if per_second is None or burst is None else RateLimit(per_second, burst)


def settings_of(row: Sequence[Any]) -> QueueSettings:
    """A row of the part ``settings_columns``."""
    (
        queue, paused, dlq_enabled, finished_us, dlq_us, failed_us, limit, per_second, burst,
        key_limit, key_per_second, key_burst,
    ) = row  # fmt: skip
    return QueueSettings(
        queue,
        bool(paused),
        bool(dlq_enabled),
        seconds_of(finished_us),
        seconds_of(dlq_us),
        seconds_of(failed_us),
        limit,
        _rate(per_second, burst),
        key_limit,
        _rate(key_per_second, key_burst),
    )


def settings_params(settings: QueueSettings, new_rate: bool) -> dict[str, Any]:
    """``configure_queue.sql``'s parameters; ``new_rate``: the rate was given, and its bucket
    starts full."""
    rate, key_rate = settings.rate_limit, settings.key_rate_limit
    return {
        "queue": settings.queue,
        "dlq_enabled": int(settings.dlq_enabled),
        "finished_retention_us": us_of(settings.finished_retention_s),
        "dlq_retention_us": us_of(settings.dlq_retention_s),
        "failed_retention_us": us_of(settings.failed_retention_s),
        "concurrency_limit": settings.concurrency_limit,
        "rate_per_second": None if rate is None else rate.per_second,
        "rate_burst": None if rate is None else rate.burst,
        "key_concurrency_limit": settings.key_concurrency_limit,
        "key_rate_per_second": None if key_rate is None else key_rate.per_second,
        "key_rate_burst": None if key_rate is None else key_rate.burst,
        "new_rate": int(new_rate),
    }


def flow_of(row: Sequence[Any] | None) -> QueueFlow | None:
    """A row of ``queue_flow.sql`` (``None``: the queue has no settings), or ``None`` when the
    queue has no limit."""
    if row is None:
        return None
    (
        limit, per_second, burst, tokens, updated_us, key_limit, key_per_second, key_burst,
        turn_cursor, turn_taken,
    ) = row  # fmt: skip
    limits = FlowLimits(
        concurrency_limit=limit,
        rate_limit=_rate(per_second, burst),
        key_concurrency_limit=key_limit,
        key_rate_limit=_rate(key_per_second, key_burst),
    )
    if limits.is_unlimited:
        return None
    # no bucket (a new rate, or none drawn on yet) reads as full; the pair is both or neither
    bucket = None if tokens is None else Bucket(tokens, time_of(updated_us))
    return QueueFlow(limits, bucket, turn_cursor, bool(turn_taken))
