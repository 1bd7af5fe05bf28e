"""A queue's flow-control settings and the keys jobs carry for them, checked once.

``FlowLimits`` is what ``configure_queue`` stores with the queue: a fleet-wide cap on live
attempts (per queue and per ``concurrency_key``) and token-bucket rates (per queue and per
key). ``None`` means no limit. Zero is refused rather than read as "paused": pausing a queue
is its own verb, and a limit of zero that silently stops a queue is a trap.
"""

from __future__ import annotations

import attrs

from awa.domain.errors import ValidationError
from awa.domain.validation import check_text, shown

__all__ = [
    "BURST_MAX",
    "CONCURRENCY_LIMIT_MAX",
    "FLOW_KEY_LENGTH_MAX",
    "PER_SECOND_MAX",
    "PER_SECOND_MIN",
    "FlowLimits",
    "RateLimit",
    "check_concurrency_key",
    "check_ordering_key",
    "check_rate_limit",
]

#: as long as a queue, kind or schedule name may be: a key goes wherever a name goes (an
#: index entry, a dashboard column, a CLI table)
FLOW_KEY_LENGTH_MAX = 128
CONCURRENCY_LIMIT_MAX = 1_000_000
BURST_MAX = 1_000_000
#: one start in about 11.6 days at the slowest; a million a second at the fastest: beyond
#: either end a limit means "never" or "no limit", which have their own spellings
PER_SECOND_MIN = 0.000001
PER_SECOND_MAX = 1_000_000.0


def _check_flow_key(name: str, key: object) -> str | None:
    if key is None:
        return None
    return check_text(name, key, length_max=FLOW_KEY_LENGTH_MAX)


def check_concurrency_key(key: object) -> str | None:
    """A job's ``concurrency_key``: ``None``, or 1-128 characters of storable text."""
    return _check_flow_key("concurrency_key", key)


def check_ordering_key(key: object) -> str | None:
    """A job's ``ordering_key``: ``None``, or 1-128 characters of storable text."""
    return _check_flow_key("ordering_key", key)


def _check_limit(name: str, value: object) -> int | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= CONCURRENCY_LIMIT_MAX
    ):
        raise ValidationError(
            f"{name} must be an integer from 1 to {CONCURRENCY_LIMIT_MAX} or None,"
            f" got {shown(value)}"
        )
    return value


def _check_per_second(name: str, value: object) -> float:
    # the range test refuses NaN and infinities too (every comparison with NaN is false), and
    # compares a huge integer exactly, where float() would overflow
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not PER_SECOND_MIN <= value <= PER_SECOND_MAX
    ):
        raise ValidationError(
            f"{name} must be a number from {PER_SECOND_MIN:f} to {PER_SECOND_MAX:.0f},"
            f" got {shown(value)}"
        )
    return float(value)


def _check_burst(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= BURST_MAX:
        raise ValidationError(
            f"{name} must be an integer from 1 to {BURST_MAX}, got {shown(value)}"
        )
    return value


def _per_second(value: object) -> float:
    return _check_per_second("per_second", value)


def _burst(value: object) -> int:
    return _check_burst("burst", value)


@attrs.frozen
class RateLimit:
    """A token bucket: up to ``burst`` starts at once, refilled at ``per_second``.

    Over any window of length ``w`` at most ``burst + per_second * w`` attempts start. The
    rate is read as the decimal it was written as (``0.3`` is three tenths, not the nearest
    binary float), so the bound a user computes by hand is the one enforced
    (``awa.domain.flow_buckets``).
    """

    per_second: float = attrs.field(converter=_per_second)
    burst: int = attrs.field(converter=_burst)


def check_rate_limit(name: str, value: object) -> RateLimit | None:
    """``None``, a ``RateLimit``, or a ``(per_second, burst)`` pair as ``configure_queue``
    takes it; refusals name the setting (``rate_limit burst must be ...``)."""
    if value is None or isinstance(value, RateLimit):
        return value
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValidationError(f"{name} is (per_second, burst) or None, got {shown(value)}")
    per_second, burst = value
    return RateLimit(
        _check_per_second(f"{name} per_second", per_second),
        _check_burst(f"{name} burst", burst),
    )


def _concurrency_limit(value: object) -> int | None:
    return _check_limit("concurrency_limit", value)


def _key_concurrency_limit(value: object) -> int | None:
    return _check_limit("key_concurrency_limit", value)


def _rate_limit(value: object) -> RateLimit | None:
    return check_rate_limit("rate_limit", value)


def _key_rate_limit(value: object) -> RateLimit | None:
    return check_rate_limit("key_rate_limit", value)


@attrs.frozen(kw_only=True)
class FlowLimits:
    """A queue's fleet-wide limits; every field ``None`` (the default) is no limit at all.

    The key limits apply to each ``concurrency_key`` of the queue separately; a job without
    a key is held only by the queue's own limits.
    """

    concurrency_limit: int | None = attrs.field(default=None, converter=_concurrency_limit)
    key_concurrency_limit: int | None = attrs.field(default=None, converter=_key_concurrency_limit)
    rate_limit: RateLimit | None = attrs.field(default=None, converter=_rate_limit)
    key_rate_limit: RateLimit | None = attrs.field(default=None, converter=_key_rate_limit)

    @property
    def has_key_limits(self) -> bool:
        """Whether the queue's ``concurrency_key`` matters: only then are its keys limited,
        and only then does a claim take them in turn (``awa.domain.flow_claims``)."""
        return self.key_concurrency_limit is not None or self.key_rate_limit is not None

    @property
    def is_unlimited(self) -> bool:
        return (
            self.concurrency_limit is None and self.rate_limit is None and not self.has_key_limits
        )
