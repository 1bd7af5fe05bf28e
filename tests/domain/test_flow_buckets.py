"""The token bucket (``awa.domain.flow_buckets``): over any window of length w at most
``burst + per_second * w`` starts, exactly; time never runs backwards; and the bucket grants
what the exact arithmetic allows, not less."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from awa.domain import ValidationError
from awa.domain.flow import Bucket, RateLimit, full_bucket, refill, take, tokens_available

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def exact(limit: RateLimit) -> Fraction:
    """The rate as the user wrote it."""
    return Fraction(repr(limit.per_second))


def test_a_full_bucket_grants_its_burst_at_once_and_then_one_per_interval() -> None:
    limit = RateLimit(2, 5)
    granted, bucket = take(full_bucket(limit, T0), limit, 10, T0)
    assert granted == 5
    assert take(bucket, limit, 1, at(0.499999))[0] == 0
    granted, bucket = take(bucket, limit, 10, at(0.5))
    assert granted == 1
    assert take(bucket, limit, 10, at(10))[0] == 5  # refilled, but never past the burst


def test_a_decimal_rate_is_read_as_written_not_as_the_nearest_binary_float() -> None:
    # the binary 0.3 is a hair under three tenths: read so, ten seconds would give 2 starts
    limit = RateLimit(0.3, 5)
    empty = Bucket(0.0, T0)
    assert tokens_available(empty, limit, at(10)) == 3
    assert take(empty, limit, 5, at(10))[0] == 3


def test_a_clock_stepped_back_adds_nothing_and_cannot_refill_an_interval_twice() -> None:
    limit = RateLimit(1, 10)
    granted, bucket = take(Bucket(0.0, T0), limit, 10, at(10))
    assert (granted, bucket.updated_at) == (10, at(10))
    granted, earlier = take(bucket, limit, 10, at(5))
    assert granted == 0
    assert earlier.updated_at == at(10)
    assert take(earlier, limit, 10, at(10.5))[0] == 0
    assert take(earlier, limit, 10, at(11))[0] == 1


def test_a_burst_lowered_since_the_bucket_was_written_caps_it_at_once() -> None:
    bucket = Bucket(10.0, T0)
    assert take(bucket, RateLimit(1, 3), 10, T0)[0] == 3
    assert refill(bucket, RateLimit(1, 3), at(-1)).tokens == 3.0


def test_taking_nothing_refills_and_a_negative_take_is_refused() -> None:
    limit = RateLimit(1, 5)
    assert take(Bucket(0.0, T0), limit, 0, at(2)) == (0, Bucket(2.0, at(2)))
    with pytest.raises(ValidationError, match=r"^a bucket grants a whole number >= 0 of starts"):
        take(Bucket(0.0, T0), limit, -1, T0)


@pytest.mark.parametrize(
    ("tokens", "updated_at", "message"),
    [
        (-1.0, T0, "bucket tokens must be a finite number >= 0, got -1.0"),
        (math.nan, T0, "bucket tokens must be a finite number >= 0, got nan"),
        (math.inf, T0, "bucket tokens must be a finite number >= 0, got inf"),
        (1.0, datetime(2030, 1, 1), "bucket updated_at must be a timezone-aware datetime"),
    ],
)
def test_a_bucket_that_cannot_be_refuses_to_be_built(
    tokens: float, updated_at: datetime, message: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        Bucket(tokens, updated_at)
    assert str(refused.value).startswith(message)


rates = st.builds(
    RateLimit,
    per_second=st.one_of(
        st.sampled_from([0.1, 0.3, 1, 2.5, 7, 200]),
        st.floats(min_value=0.001, max_value=1000, allow_nan=False, allow_infinity=False),
    ),
    burst=st.integers(min_value=1, max_value=20),
)
# (microseconds since the previous call, starts asked for)
steps = st.lists(
    st.tuples(
        st.one_of(st.integers(0, 2_000_000), st.sampled_from([0, 1, 333_333, 1_000_000])),
        st.integers(0, 25),
    ),
    min_size=1,
    max_size=60,
)


def _run(limit: RateLimit, start_full: bool, moves: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(microsecond, granted) for each take, the bucket carried from one to the next."""
    bucket = full_bucket(limit, T0) if start_full else Bucket(0.0, T0)
    now_us, starts = 0, []
    for delta_us, asked in moves:
        now_us += delta_us
        granted, bucket = take(bucket, limit, asked, T0 + timedelta(microseconds=now_us))
        starts.append((now_us, granted))
    return starts


def _assert_window_bound(limit: RateLimit, starts: list[tuple[int, int]]) -> None:
    """Every window [a, b] between two takes: sum of starts <= burst + per_second * (b - a)."""
    for i, (a_us, _) in enumerate(starts):
        started = 0
        for b_us, granted in starts[i:]:
            started += granted
            bound = limit.burst + exact(limit) * Fraction(b_us - a_us, 1_000_000)
            assert started <= bound, (a_us, b_us, started, bound)


@given(rates, st.booleans(), steps)
def test_no_window_ever_holds_more_starts_than_burst_plus_rate_times_its_length(
    limit: RateLimit, start_full: bool, moves: list[tuple[int, int]]
) -> None:
    _assert_window_bound(limit, _run(limit, start_full, moves))


@given(
    rates, st.lists(st.tuples(st.integers(-3_000_000, 3_000_000), st.integers(0, 25)), max_size=40)
)
def test_with_a_clock_that_jumps_both_ways_the_bound_holds_in_the_time_the_bucket_saw(
    limit: RateLimit, moves: list[tuple[int, int]]
) -> None:
    """A ``now`` behind the bucket counts as the bucket's own time: the bound holds over the
    latest time seen, so no interval is ever refilled twice."""
    bucket, seen_us, starts = full_bucket(limit, T0), 0, []
    for offset_us, asked in moves:
        granted, bucket = take(bucket, limit, asked, T0 + timedelta(microseconds=offset_us))
        seen_us = max(seen_us, offset_us)
        assert bucket.updated_at == T0 + timedelta(microseconds=seen_us)
        starts.append((seen_us, granted))
    _assert_window_bound(limit, starts)


@given(rates, st.booleans(), steps)
def test_the_bucket_grants_all_the_exact_arithmetic_allows_and_never_more(
    limit: RateLimit, start_full: bool, moves: list[tuple[int, int]]
) -> None:
    """A shadow bucket in exact arithmetic: the stored tokens never exceed it, and fall
    short of it only by rounding, far less than what one microsecond of refill adds."""
    bucket = full_bucket(limit, T0) if start_full else Bucket(0.0, T0)
    shadow = Fraction(bucket.tokens)
    now_us = 0
    for delta_us, asked in moves:
        now_us += delta_us
        shadow = min(shadow + exact(limit) * Fraction(delta_us, 1_000_000), Fraction(limit.burst))
        granted, bucket = take(bucket, limit, asked, T0 + timedelta(microseconds=now_us))
        if math.floor(shadow - Fraction(1, 10**9)) == math.floor(shadow):
            assert granted == min(asked, math.floor(shadow))
        shadow -= granted
        assert 0 <= bucket.tokens <= shadow
        assert shadow - Fraction(bucket.tokens) < Fraction(1, 10**9)
