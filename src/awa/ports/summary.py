"""The queue summary: every queue counted once by the maintenance leader, for readers that must
not count the job table themselves (the dashboard, metrics). A store that keeps one has the
``SummarizesQueues`` capability (``awa.ports.capabilities``).

A store counts in groups (``StateGroup``, ``DeadGroup``), keeps the groups with the time it
counted them, and hands them to ``build_summary`` with its queue settings read at that moment:
the counts are as old as the summary, the settings (paused, dead-letter routing) are current.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

import attrs

from awa.domain import JobState
from awa.ports.results import QueueSettings, QueueStats

__all__ = [
    "ENDED_WINDOW_S",
    "DlqGroup",
    "QueueSettings",
    "QueueSummary",
    "StateGroup",
    "build_summary",
]

#: how far back a summary counts the jobs that ended (its throughput), by default
ENDED_WINDOW_S = 300.0
_ENDED_STATES = (JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED)


@attrs.frozen
class StateGroup:
    """The jobs of one queue in one state; ``ended``: how many of them reached it (a terminal
    state) within the window. ``estimated``: ``count`` is the store's estimate, not a count
    (a store may estimate a large group of finished jobs rather than read every one)."""

    queue: str
    state: JobState
    count: int
    oldest_available_at: datetime | None = None
    ended: int = 0
    estimated: bool = False


@attrs.frozen
class DlqGroup:
    """The dead-letter entries of one queue and kind held for one reason; ``ended``: how many
    got there within the window."""

    queue: str
    kind: str
    reason: str
    count: int
    latest_at: datetime
    ended: int = 0


@attrs.frozen
class QueueSummary:
    """Every queue as last counted, at ``counted_at``.

    ``queues``: counts per state (``QueueStats.estimated`` names the states whose count is an
    estimate), dead-letter depth and the oldest available job as counted; ``paused`` and
    ``dlq_enabled`` as they are now. ``ended``: per queue, how many jobs reached
    ``completed``, ``failed`` (dead-lettered included) or ``cancelled`` in the ``window_s``
    seconds before ``counted_at``. ``dlq``: the dead-letter queue by queue, kind and reason.
    """

    counted_at: datetime
    window_s: float
    queues: tuple[QueueStats, ...]
    ended: Mapping[str, Mapping[JobState, int]]
    dlq: tuple[DlqGroup, ...]

    def queue(self, name: str) -> QueueStats | None:
        return next((stats for stats in self.queues if stats.queue == name), None)


def build_summary(
    counted_at: datetime,
    window_s: float,
    states: Iterable[StateGroup],
    dead: Iterable[DlqGroup],
    settings: Iterable[QueueSettings],
) -> QueueSummary:
    """The summary of counted groups, with the settings of now. Every queue that has jobs,
    dead letters or settings appears, in name order, with every state counted (0 if none)."""
    counts: dict[str, dict[JobState, int]] = {}
    estimated: dict[str, set[JobState]] = {}
    ended: dict[str, dict[JobState, int]] = {}
    oldest: dict[str, datetime] = {}
    depth: dict[str, int] = {}

    def ended_of(queue: str) -> dict[JobState, int]:
        return ended.setdefault(queue, {state: 0 for state in _ENDED_STATES})

    for jobs in states:
        counts.setdefault(jobs.queue, {state: 0 for state in JobState})[jobs.state] += jobs.count
        if jobs.estimated:
            estimated.setdefault(jobs.queue, set()).add(jobs.state)
        if jobs.oldest_available_at is not None:
            first = oldest.get(jobs.queue, jobs.oldest_available_at)
            oldest[jobs.queue] = min(jobs.oldest_available_at, first)
        if jobs.ended and jobs.state in _ENDED_STATES:
            ended_of(jobs.queue)[jobs.state] += jobs.ended
    groups = []
    for group in dead:
        depth[group.queue] = depth.get(group.queue, 0) + group.count
        if group.ended:
            ended_of(group.queue)[JobState.FAILED] += group.ended
        groups.append(group)
    configured = {s.queue: s for s in settings}
    names = sorted(set(counts) | set(depth) | set(configured))
    queues = tuple(
        QueueStats(
            queue=name,
            counts=counts.get(name, {state: 0 for state in JobState}),
            dlq_depth=depth.get(name, 0),
            paused=name in configured and configured[name].paused,
            dlq_enabled=name in configured and configured[name].dlq_enabled,
            oldest_available_at=oldest.get(name),
            estimated=frozenset(estimated.get(name, ())),
            concurrency_limit=configured[name].concurrency_limit if name in configured else None,
            rate_limit=configured[name].rate_limit if name in configured else None,
            key_concurrency_limit=(
                configured[name].key_concurrency_limit if name in configured else None
            ),
            key_rate_limit=configured[name].key_rate_limit if name in configured else None,
        )
        for name in names
    )
    return QueueSummary(
        counted_at=counted_at,
        window_s=window_s,
        queues=queues,
        ended={name: ended_of(name) for name in names},
        dlq=tuple(sorted(groups, key=lambda g: (g.queue, g.kind, g.reason))),
    )
