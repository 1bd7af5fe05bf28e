"""A queue's flow limits and a job's flow keys (``awa.domain.flow_limits``): bad settings are
refused with one line naming the setting, good ones are kept as given."""

from __future__ import annotations

from typing import Any

import pytest

from awa.domain import ValidationError
from awa.domain.flow import (
    BURST_MAX,
    CONCURRENCY_LIMIT_MAX,
    FLOW_KEY_LENGTH_MAX,
    FlowLimits,
    RateLimit,
    check_concurrency_key,
    check_ordering_key,
)

NAN = float("nan")
INF = float("inf")

LIMIT = "must be an integer from 1 to 1000000 or None, got"
PER_SECOND = "per_second must be a number from 0.000001 to 1000000, got"
BURST = "burst must be an integer from 1 to 1000000, got"

REFUSED_LIMITS: list[tuple[dict[str, Any], str]] = [
    ({"concurrency_limit": 0}, f"concurrency_limit {LIMIT} 0"),
    ({"concurrency_limit": -1}, f"concurrency_limit {LIMIT} -1"),
    ({"concurrency_limit": 2.0}, f"concurrency_limit {LIMIT} 2.0"),
    ({"concurrency_limit": True}, f"concurrency_limit {LIMIT} True"),
    ({"concurrency_limit": "4"}, f"concurrency_limit {LIMIT} '4'"),
    ({"concurrency_limit": CONCURRENCY_LIMIT_MAX + 1}, f"concurrency_limit {LIMIT}"),
    ({"key_concurrency_limit": 0}, f"key_concurrency_limit {LIMIT} 0"),
    ({"key_concurrency_limit": NAN}, f"key_concurrency_limit {LIMIT} nan"),
    ({"rate_limit": (0, 1)}, f"rate_limit {PER_SECOND} 0"),
    ({"rate_limit": (-5.0, 1)}, f"rate_limit {PER_SECOND} -5.0"),
    ({"rate_limit": (NAN, 1)}, f"rate_limit {PER_SECOND} nan"),
    ({"rate_limit": (INF, 1)}, f"rate_limit {PER_SECOND} inf"),
    ({"rate_limit": (10**400, 1)}, f"rate_limit {PER_SECOND}"),
    ({"rate_limit": (True, 1)}, f"rate_limit {PER_SECOND} True"),
    ({"rate_limit": ("5", 1)}, f"rate_limit {PER_SECOND} '5'"),
    ({"rate_limit": (5, 0)}, f"rate_limit {BURST} 0"),
    ({"rate_limit": (5, -3)}, f"rate_limit {BURST} -3"),
    ({"rate_limit": (5, 1.5)}, f"rate_limit {BURST} 1.5"),
    ({"rate_limit": (5, NAN)}, f"rate_limit {BURST} nan"),
    ({"rate_limit": (5, BURST_MAX + 1)}, f"rate_limit {BURST}"),
    ({"rate_limit": 5}, "rate_limit is (per_second, burst) or None, got 5"),
    ({"rate_limit": (5,)}, "rate_limit is (per_second, burst) or None, got (5,)"),
    ({"rate_limit": (5, 1, 1)}, "rate_limit is (per_second, burst) or None, got (5, 1, 1)"),
    ({"rate_limit": "5/s"}, "rate_limit is (per_second, burst) or None, got '5/s'"),
    ({"key_rate_limit": (0.0, 1)}, f"key_rate_limit {PER_SECOND} 0.0"),
    ({"key_rate_limit": (1, 0)}, f"key_rate_limit {BURST} 0"),
]


@pytest.mark.parametrize(("settings", "message"), REFUSED_LIMITS)
def test_a_bad_limit_is_refused_with_one_line_naming_the_setting(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        FlowLimits(**settings)
    text = str(refused.value)
    assert text.startswith(message)
    assert "\n" not in text


def test_a_rate_limit_built_directly_names_its_own_fields() -> None:
    with pytest.raises(ValidationError, match=r"^per_second must be a number from 0\.000001"):
        RateLimit(0, 1)
    with pytest.raises(
        ValidationError, match=r"^burst must be an integer from 1 to 1000000, got 0$"
    ):
        RateLimit(1, 0)


def test_good_limits_are_kept_as_given_and_pairs_become_rate_limits() -> None:
    limits = FlowLimits(
        concurrency_limit=4, key_concurrency_limit=1, rate_limit=(50, 10), key_rate_limit=[5, 1]
    )
    assert limits.concurrency_limit == 4
    assert limits.key_concurrency_limit == 1
    assert limits.rate_limit == RateLimit(50.0, 10)
    assert limits.key_rate_limit == RateLimit(5.0, 1)
    assert isinstance(limits.rate_limit.per_second, float)
    assert FlowLimits(rate_limit=RateLimit(0.5, 2)).rate_limit == RateLimit(0.5, 2)


def test_the_extremes_of_each_range_are_accepted() -> None:
    FlowLimits(concurrency_limit=1, key_concurrency_limit=CONCURRENCY_LIMIT_MAX)
    FlowLimits(rate_limit=(0.000001, 1), key_rate_limit=(1_000_000, BURST_MAX))


def test_no_limit_at_all_is_unlimited_and_limits_no_key() -> None:
    assert FlowLimits().is_unlimited
    assert not FlowLimits().has_key_limits
    assert not FlowLimits(concurrency_limit=3).is_unlimited
    assert not FlowLimits(concurrency_limit=3).has_key_limits
    assert FlowLimits(key_concurrency_limit=1).has_key_limits
    assert FlowLimits(key_rate_limit=(1, 1)).has_key_limits


@pytest.mark.parametrize(
    ("check", "name"),
    [(check_concurrency_key, "concurrency_key"), (check_ordering_key, "ordering_key")],
)
def test_a_flow_key_is_none_or_short_storable_text(check: Any, name: str) -> None:
    assert check(None) is None
    assert check("tenant-42") == "tenant-42"
    assert check("ü" * FLOW_KEY_LENGTH_MAX) == "ü" * FLOW_KEY_LENGTH_MAX
    refusals = [
        ("", f"{name} must be a non-empty string, got ''"),
        ("   ", f"{name} must be a non-empty string, got '   '"),
        (42, f"{name} must be a non-empty string, got 42"),
        ("k" * (FLOW_KEY_LENGTH_MAX + 1), f"{name} is 129 characters; at most 128"),
        ("a\x00b", f"{name} contains a NUL character, which cannot be stored"),
        ("lone \ud800", f"{name} contains an unpaired surrogate"),
    ]
    for key, message in refusals:
        with pytest.raises(ValidationError) as refused:
            check(key)
        assert str(refused.value).startswith(message)
        assert "\n" not in str(refused.value)
