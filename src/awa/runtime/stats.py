"""What a worker process has done, counted as it happens (tests and diagnostics read it)."""

from __future__ import annotations

import attrs

__all__ = ["RuntimeStats"]


@attrs.define
class RuntimeStats:
    claimed: int = 0
    claimed_ahead: int = 0  # of those, claimed ahead of a free slot (``QueueConfig.claim_ahead``)
    finished: int = 0
    stale_finishes: int = 0
    dropped: int = 0
    rescued: int = 0
    fired: int = 0  # jobs this process enqueued for periodic schedules
