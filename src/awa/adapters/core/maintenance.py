"""The maintenance leader's verbs (``awa.ports.MaintenanceStore``): rescue, promotion,
retention, the periodic fires and the leadership itself."""

from __future__ import annotations

import abc
from datetime import datetime

from awa.adapters._fencing import Writes
from awa.adapters.core.fenced import FencedCore
from awa.domain import FirePlan, Job, ScheduleRecord, decisions, periodic
from awa.domain.defaults import STALENESS_S
from awa.domain.rescue import rescue_cause
from awa.domain.retention import Retention
from awa.domain.validation import check_seconds
from awa.ports import FireRound, Rescued
from awa.ports.checks import check_fire_plan, check_limit, check_owner, check_retention

__all__ = ["Maintaining"]


class Maintaining(FencedCore):
    # -- primitives -------------------------------------------------------------------------
    @abc.abstractmethod
    def _promote(self, limit: int) -> list[Job]:
        """Row 2 (``decisions.promote``) for due jobs, in ``(run_at, id)`` order
        (``awa.adapters.core.row_paths`` writes it over a ``RowTransaction``)."""

    @abc.abstractmethod
    def _delete_finished(self, retention: Retention, older_than_s: float, limit: int) -> int:
        """Jobs in ``retained_states(retention)`` past their queue's ``retention.value``
        setting (``older_than_s`` where the queue has none), oldest ``finalized_at`` first."""

    @abc.abstractmethod
    def _expire_dlq(self, older_than_s: float, limit: int) -> int:
        """Dead-letter entries past their queue's ``dlq_retention_s`` (``older_than_s`` where
        the queue has none), oldest ``dlq_at`` first."""

    @abc.abstractmethod
    def _upcoming_schedules(self, limit: int) -> tuple[datetime, list[ScheduleRecord]]:
        """The store's time, and up to ``limit`` unpaused schedules, earliest next fire first."""

    @abc.abstractmethod
    def _fire(self, plan: FirePlan) -> list[Job] | None:
        """Atomically: move the schedule named ``plan.name`` from ``plan.expected_next`` to
        ``plan.following`` (with ``last_fire_at`` the last of ``plan.fires``) if it is still
        there and not paused, and only then insert ``plan.jobs`` (row 1), skipping a job whose
        unique key is held. ``None`` when the compare-and-set failed."""

    @abc.abstractmethod
    def _try_lead(self, owner: str, ttl_s: float) -> bool: ...

    @abc.abstractmethod
    def _release_lead(self, owner: str) -> None: ...

    # -- the verbs --------------------------------------------------------------------------
    def rescue(self, *, staleness_s: float = STALENESS_S, limit: int = 1000) -> list[Rescued]:
        check_seconds("heartbeat staleness", staleness_s, allow_zero=False)
        check_limit(limit)
        with self._transaction("rescuing jobs") as tx:
            candidates = tx.rescue_candidates(float(staleness_s), limit)
            if not candidates:
                return []
            now, writes, rescued = tx.now(), Writes(), []
            for locked in candidates:  # in id order, like every adapter, so jitter lines up
                cause = rescue_cause(locked.job, now, staleness_s)
                if cause is None:  # the store and the domain disagree: a bug, not a race
                    raise AssertionError(f"job {locked.job.id} was locked for rescue, no cause")
                decision = decisions.rescue(locked.job, cause, now, self.rng)
                dead = writes.decided(decision, locked.dlq_enabled)
                rescued.append(Rescued(decision.job, cause, dead))
            tx.write(writes)
            return rescued

    def promote(self, *, limit: int = 1000) -> list[Job]:
        check_limit(limit)
        return self._promote(limit)

    def delete_finished(
        self, *, older_than_s: float, failed_older_than_s: float | None = None, limit: int = 1000
    ) -> int:
        check_retention(older_than_s, limit, failed_older_than_s)
        default_s = {
            Retention.COMPLETED: float(older_than_s),
            Retention.FAILED: float(
                older_than_s if failed_older_than_s is None else failed_older_than_s
            ),
        }
        deleted = 0
        for retention in Retention:  # one bounded statement each, within one batch in all
            if deleted < limit:
                deleted += self._delete_finished(retention, default_s[retention], limit - deleted)
        return deleted

    def expire_dlq(self, *, older_than_s: float, limit: int = 1000) -> int:
        check_retention(older_than_s, limit)
        return self._expire_dlq(float(older_than_s), limit)

    def plan_fires(self, *, limit: int = 100) -> FireRound:
        check_limit(limit)
        now, records = self._upcoming_schedules(limit)
        plans = [plan for r in records if (plan := periodic.plan_fires(r, now)) is not None]
        later = [r.next_fire_at for r in records if r.next_fire_at > now]
        more = len(records) == limit and not later
        return FireRound(now, plans, min(later, default=None), more)

    def fire(self, plan: FirePlan) -> list[Job] | None:
        return self._fire(check_fire_plan(plan))

    def try_lead(self, owner: str, *, ttl_s: float) -> bool:
        check_owner(owner)
        check_seconds("leader ttl", ttl_s, allow_zero=False)
        return self._try_lead(owner, float(ttl_s))

    def release_lead(self, owner: str) -> None:
        check_owner(owner)
        self._release_lead(owner)
