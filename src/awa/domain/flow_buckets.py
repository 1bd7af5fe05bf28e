"""The token bucket of a rate limit, as pure functions over a frozen ``Bucket``.

A bucket holds ``tokens`` as of ``updated_at``; between writes it refills at
``per_second`` up to ``burst``. A start takes one whole token. Because the bucket never holds
more than ``burst`` and gains exactly ``per_second * w`` over ``w`` seconds, the starts in any
window of length ``w`` are at most ``burst + per_second * w``.

Floats drift, and a drift upwards across a whole token is one start too many. So the
arithmetic is exact (``Fraction``): the rate is the decimal the user wrote, elapsed time is
whole microseconds (what a ``datetime`` holds), and the float written back is rounded down.
The stored tokens therefore never exceed the exact ones, and the bound holds exactly.

Time never runs backwards here: a ``now`` before ``updated_at`` (another host's clock, a
clock stepped back) adds nothing and leaves ``updated_at`` where it was, so the same
interval cannot be refilled twice.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from fractions import Fraction

import attrs

from awa.domain.errors import ValidationError
from awa.domain.flow_limits import RateLimit
from awa.domain.validation import check_instant, shown

__all__ = ["Bucket", "full_bucket", "refill", "take", "tokens_available"]

_MICROSECOND = timedelta(microseconds=1)
_MICROSECONDS_PER_SECOND = 1_000_000


def _tokens(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ValidationError(f"bucket tokens must be a finite number >= 0, got {shown(value)}")
    return float(value)


def _updated_at(value: object) -> datetime:
    return check_instant("bucket updated_at", value)


@attrs.frozen
class Bucket:
    """A rate limit's tokens as of ``updated_at``. A store keeps one per rate-limited queue
    and per key of a key-rate-limited queue; no stored bucket reads as a full one."""

    tokens: float = attrs.field(converter=_tokens)
    updated_at: datetime = attrs.field(converter=_updated_at)


def full_bucket(limit: RateLimit, now: datetime) -> Bucket:
    """The bucket of a limit nothing has drawn on: ``burst`` tokens."""
    return Bucket(float(limit.burst), now)


def _exact_rate(limit: RateLimit) -> Fraction:
    # repr() is the shortest decimal that reads back as the same float: 0.3 is 3/10
    return Fraction(repr(limit.per_second))


def _rounded_down(exact: Fraction) -> float:
    near = float(exact)
    if Fraction(near) > exact:
        near = math.nextafter(near, -math.inf)
    return max(near, 0.0)


def _refilled(bucket: Bucket, limit: RateLimit, now: datetime) -> tuple[Fraction, datetime]:
    """The exact tokens at ``max(now, updated_at)``, capped at ``burst`` (a burst lowered
    since the bucket was written takes effect at once)."""
    tokens = Fraction(bucket.tokens)
    elapsed_us = (now - bucket.updated_at) // _MICROSECOND
    if elapsed_us <= 0:
        return min(tokens, Fraction(limit.burst)), bucket.updated_at
    gained = _exact_rate(limit) * Fraction(elapsed_us, _MICROSECONDS_PER_SECOND)
    return min(tokens + gained, Fraction(limit.burst)), now


def refill(bucket: Bucket, limit: RateLimit, now: datetime) -> Bucket:
    """``bucket`` as of ``now``: what it gained since ``updated_at``, up to ``burst``."""
    tokens, at = _refilled(bucket, limit, now)
    return Bucket(_rounded_down(tokens), at)


def tokens_available(bucket: Bucket, limit: RateLimit, now: datetime) -> int:
    """How many starts the bucket allows at ``now``: its whole tokens."""
    return math.floor(_refilled(bucket, limit, now)[0])


def take(bucket: Bucket, limit: RateLimit, n: int, now: datetime) -> tuple[int, Bucket]:
    """Up to ``n`` starts at ``now``: how many the bucket grants, and the bucket after them.
    A grant of fewer than ``n`` leaves less than one whole token."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValidationError(f"a bucket grants a whole number >= 0 of starts, got {shown(n)}")
    tokens, at = _refilled(bucket, limit, now)
    granted = min(n, math.floor(tokens))
    return granted, Bucket(_rounded_down(tokens - granted), at)
