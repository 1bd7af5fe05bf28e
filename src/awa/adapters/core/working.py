"""The worker's verbs (``awa.ports.WorkerStore``): claim attempts, and the fenced writes of a
live one (heartbeat, finish, release)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime

from awa.adapters.core.fenced import FencedCore
from awa.domain import Job, Lease, decisions
from awa.domain.defaults import DEADLINE_S
from awa.ports import Finish, Heartbeat, WriteResult
from awa.ports.checks import check_claim, check_finishes, check_heartbeats, check_leases

__all__ = ["Working"]


class Working(FencedCore):
    @abc.abstractmethod
    def _claim(
        self, queue: str, limit: int, deadline_duration_s: float, priority_aging_s: float
    ) -> list[Job]:
        """Row 3 (``decisions.claim``'s values), in ``decisions.claim_order``
        (``awa.adapters.core.row_paths`` writes it over a ``RowTransaction``)."""

    def claim(
        self,
        queue: str,
        *,
        limit: int,
        deadline_duration_s: float = DEADLINE_S,
        priority_aging_s: float = 0.0,
    ) -> list[Job]:
        check_claim(queue, limit, deadline_duration_s, priority_aging_s)
        claimed = self._claim(queue, limit, float(deadline_duration_s), float(priority_aging_s))
        if any(job.unreadable for job in claimed):  # rare: a row this version cannot read
            return self._fail_unreadable(claimed)
        return claimed

    def _fail_unreadable(self, claimed: list[Job]) -> list[Job]:
        """Row 7 for each claimed job its store could not read whole: no handler can be given
        it, so it fails at once, and the rest of the batch goes to its handlers."""
        unreadable = [job for job in claimed if job.unreadable]
        self._finish(
            [
                Finish(job.lease, decisions.unreadable_failure(job), claimed=job)
                for job in unreadable
            ]
        )
        return [job for job in claimed if not job.unreadable]

    def heartbeat(self, beats: Sequence[Heartbeat]) -> list[WriteResult]:
        check_heartbeats(beats)

        def decide(index: int, job: Job, now: datetime) -> Job:
            beat = beats[index]
            return decisions.heartbeat(job, now, beat.progress, beat.metadata)

        return self._fenced("heartbeat", [beat.lease for beat in beats], decide)

    def finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        check_finishes(finishes)
        return self._finish(finishes)

    def _finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        """The checked finishes written: the one write a store may take a faster way
        (PostgreSQL's completions) or hold (the memory store's faults), and the one claim
        calls for a job it cannot hand over."""

        def decide(index: int, job: Job, now: datetime) -> decisions.Decision:
            fin = finishes[index]
            return decisions.finish(job, fin.outcome, now, self.rng, fin.progress, fin.metadata)

        return self._fenced("finish", [fin.lease for fin in finishes], decide)

    def release(self, leases: Sequence[Lease]) -> list[WriteResult]:
        check_leases(leases)

        def decide(_: int, job: Job, now: datetime) -> decisions.Decision:
            return decisions.release(job, now)

        return self._fenced("releasing attempts", leases, decide)
