"""Retry delays: exponential in the attempt number, with bounded random jitter."""

from __future__ import annotations

from typing import Protocol

__all__ = ["BACKOFF_MAX_S", "RandomSource", "backoff_s"]

BACKOFF_MAX_S = 24 * 3600.0
_JITTER_FRACTION = 0.25
_EXPONENT_MAX = 30  # 2**30 s already exceeds the 24 h cap


class RandomSource(Protocol):
    """Anything with ``random() -> float in [0, 1)``; ``random.Random(seed)`` in tests."""

    def random(self) -> float: ...


def backoff_s(attempt: int, rng: RandomSource) -> float:
    """Delay before the retry that follows ``attempt``:
    ``min(2**n + uniform(0, 0.25) * 2**n, 24 h)`` seconds."""
    base = 2.0 ** min(max(attempt, 0), _EXPONENT_MAX)
    return min(base + rng.random() * _JITTER_FRACTION * base, BACKOFF_MAX_S)
