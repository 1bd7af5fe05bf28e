"""How many jobs one more claim of a queue may ask for, in a process whose claims of that queue
may overlap (``QueueConfig.claimers``).

A process holds a queue's jobs in three ways: running in its ``slots``, claimed ahead and
waiting for a slot (at most ``ahead`` of them, the claim-ahead allowance), and asked for by
claims still on their way. A claim asks only for what the first two leave once the third is
counted, so however many claims overlap, every job they bring back has a slot or a place
ahead: none is claimed that the process can neither start nor hold.
"""

from __future__ import annotations

__all__ = ["claim_size"]


def claim_size(
    *, slots: int, running: int, waiting: int, in_flight: int, ahead: int, batch_max: int
) -> int:
    """The most jobs a claim may ask for now (0: none): the queue's free ``slots`` and its
    ``ahead`` allowance, less the jobs ``waiting`` ahead and those claims ``in_flight``
    asked for, at most ``batch_max``. With every claim sized so, ``running + waiting +
    in_flight`` never exceeds ``slots + ahead``."""
    return max(0, min(slots - running + ahead - waiting - in_flight, batch_max))
