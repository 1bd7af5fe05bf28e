"""The laws checked on the world's final state, once the calm phase has let every job finish.

Each job has one home and none is lost; every field agrees with its state; every job finished
(liveness); a failed job on a dead-letter queue is in it, with the reason the poison-job table
gives for its last error; and the scheduling laws of ``scheduling.py`` hold. Each broken law
is recorded as a violation on the ``RecordingStore``.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from awa.adapters.memory import MemoryStore
from awa.domain import JobState
from awa.testing.laws import field_disagreements
from awa.testing.simulation.processes import DLQ_QUEUES
from awa.testing.simulation.recorder import RecordingStore, expected_dlq_reason
from awa.testing.simulation.scheduling import fire_gaps, fire_of, unique_violations

__all__ = ["CalmWindow", "check_final_state"]

#: from the calm's start, time enough for a leader to be elected (leadership ttl + a round)
_LEADER_ELECTED_S = 30.0

#: when the calm phase began and when it paused the schedules (``None``: it never did)
CalmWindow = tuple[datetime | None, datetime | None]


def check_final_state(
    store: RecordingStore, calm: CalmWindow | None
) -> tuple[Counter[str], Counter[str]]:
    """Check the final state's laws (the scheduling ones too, unless ``calm`` is ``None``: the
    run had no scheduling); the jobs by final state and the dead letters by reason."""
    final: Counter[str] = Counter()
    dlq: Counter[str] = Counter()
    all_jobs, all_entries = _everything(store.store)
    jobs = {j.id: j for j in all_jobs}
    entries = {e.job.id: e for e in all_entries}
    for job_id in jobs.keys() & entries.keys():
        store.violation(f"job {job_id} is in two homes")
    missing = set(store.models) - jobs.keys() - entries.keys()
    for job_id in sorted(missing):
        store.violation(f"job {job_id} was lost")
    for job in (*jobs.values(), *(entry.job for entry in entries.values())):
        for problem in field_disagreements(job):
            store.violation(problem)
    for job in jobs.values():
        final[job.state.value] += 1
        if not job.state.is_terminal:
            store.violation(f"job {job.id} never finished: {job.state.value} (liveness)")
        if job.state is JobState.FAILED and job.queue in DLQ_QUEUES:
            store.violation(f"failed job {job.id} on a DLQ queue is not in the DLQ")
    if calm is not None:
        _check_scheduling(store, [*jobs.values(), *(e.job for e in entries.values())], jobs, calm)
    for entry in entries.values():
        final["dead_lettered"] += 1
        dlq[entry.reason] += 1
        if entry.reason != expected_dlq_reason(entry.job.errors[-1]):
            store.violation(
                f"job {entry.job.id} dead-lettered as {entry.reason} after"
                f" {entry.job.errors[-1].error!r}"
            )
    return final, dlq


def _check_scheduling(
    store: RecordingStore, everything: list[Any], jobs: dict[int, Any], calm: CalmWindow
) -> None:
    """The scheduling laws on the final state (``scheduling.py``)."""
    fired, twice = _fires_of(everything)
    for found in twice + unique_violations(list(jobs.values())):
        store.violation(found)
    calm_since, schedules_paused_at = calm
    if calm_since is None or schedules_paused_at is None:
        store.violation("the calm phase never let the schedules fire")
        return
    calm_from = calm_since + timedelta(seconds=_LEADER_ELECTED_S)
    calm_until = schedules_paused_at - timedelta(seconds=1)
    for gap in fire_gaps(fired, calm_from, calm_until):
        store.violation(gap)


def _fires_of(jobs: list[Any]) -> tuple[dict[str, list[datetime]], list[str]]:
    """Every job's fire, by schedule, and the fires enqueued more than once."""
    fired: dict[str, list[datetime]] = {}
    for job in jobs:
        fire = fire_of(job)
        if fire is not None:
            fired.setdefault(fire[0], []).append(fire[1])
    twice = [
        f"{name} enqueued its fire at {moment.isoformat()} twice"
        for name, moments in fired.items()
        for moment in sorted({m for m in moments if moments.count(m) > 1})
    ]
    return fired, twice


def _everything(store: Any) -> tuple[list[Any], list[Any]]:
    """Every job and dead-letter entry: unbounded on the memory store; through the bounded
    listings elsewhere (simulations of other stores stay well under their 5,000 bound)."""
    if isinstance(store, MemoryStore):
        return store.snapshot()
    return store.list_jobs(limit=5000), store.list_dlq(limit=5000)
