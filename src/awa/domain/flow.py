"""Flow control's names in one place: the limits a queue stores (``flow_limits``), the
token bucket of a rate limit (``flow_buckets``) and the claim decision over both
(``flow_claims``). Import from here; the split is only to keep each module short."""

from awa.domain.flow_buckets import Bucket, full_bucket, refill, take, tokens_available
from awa.domain.flow_claims import (
    HOLD_REASONS,
    Candidate,
    ClaimDecision,
    FlowState,
    HoldReason,
    QueueKey,
    decide_claims,
)
from awa.domain.flow_limits import (
    BURST_MAX,
    CONCURRENCY_LIMIT_MAX,
    FLOW_KEY_LENGTH_MAX,
    PER_SECOND_MAX,
    PER_SECOND_MIN,
    FlowLimits,
    RateLimit,
    check_concurrency_key,
    check_ordering_key,
    check_rate_limit,
)

__all__ = [
    "BURST_MAX",
    "CONCURRENCY_LIMIT_MAX",
    "FLOW_KEY_LENGTH_MAX",
    "HOLD_REASONS",
    "PER_SECOND_MAX",
    "PER_SECOND_MIN",
    "Bucket",
    "Candidate",
    "ClaimDecision",
    "FlowLimits",
    "FlowState",
    "HoldReason",
    "QueueKey",
    "RateLimit",
    "check_concurrency_key",
    "check_ordering_key",
    "check_rate_limit",
    "decide_claims",
    "full_bucket",
    "refill",
    "take",
    "tokens_available",
]
