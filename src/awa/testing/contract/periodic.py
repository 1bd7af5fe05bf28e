"""The contract of periodic schedules: registered, listed, paused, triggered, removed; due
fires planned from the store's clock; a fire enqueued only by the compare-and-set that moves
its schedule on, so a stale plan (a leader that lost the race) enqueues nothing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import attrs
import pytest

from awa.adapters.memory import ManualClock
from awa.domain import (
    JobState,
    NewJob,
    Schedule,
    ScheduleNotFound,
    Unique,
    ValidationError,
)
from awa.domain.periodic import CATCH_UP_FIRES_MAX
from awa.ports import ClaimStore
from awa.testing.contract._helpers import StoreFixtures

__all__ = ["PeriodicContract"]

# the suite's ManualClock starts at 2030-01-01T00:00:00Z, a fire time of every schedule here
EVERY_MINUTE = "* * * * *"


def _schedule(name: str = "tick", cron: str = EVERY_MINUTE, **fields: object) -> Schedule:
    job = fields.pop("job", NewJob(kind="tick", queue="periodic", args={"n": 1}))
    return Schedule(name=name, cron=cron, job=job, **fields)


def _at(clock: ManualClock, minute: int, second: int = 0) -> datetime:
    start = clock.now().replace(minute=0, second=0, microsecond=0)
    return start + timedelta(minutes=minute, seconds=second)


class PeriodicContract(StoreFixtures):
    """Schedules in the store, and fires that happen once."""

    def test_registering_is_additive_and_idempotent(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        clock.set(_at(clock, 0, 30))
        [tick] = store.register_schedules([_schedule()])
        assert tick.next_fire_at == _at(clock, 1)  # the first fire after now, never at once
        assert tick.last_fire_at is None
        assert not tick.paused
        clock.advance(5)
        assert store.register_schedules([_schedule()]) == [tick]  # the same again: no change
        store.register_schedules([_schedule("tock", "0 * * * *")])
        assert [r.name for r in store.list_schedules()] == ["tick", "tock"]
        moved = _schedule(job=NewJob(kind="tick", queue="periodic", args={"n": 2}))
        [changed] = store.register_schedules([moved])
        assert changed.next_fire_at == tick.next_fire_at  # same timing: same next fire
        assert changed.schedule.job.args == {"n": 2}
        clock.set(_at(clock, 10, 30))
        [retimed] = store.register_schedules([_schedule(cron="*/15 * * * *")])
        assert retimed.next_fire_at == _at(clock, 15)  # new timing: from now on
        assert store.list_schedules()[0] == retimed

    def test_a_schedule_changed_in_every_field_is_stored_as_changed(
        self, store: ClaimStore
    ) -> None:
        store.register_schedules([_schedule()])
        job = NewJob(
            kind="tock",
            queue="other",
            args={"n": 2},
            priority=3,
            max_attempts=4,
            tags=("t",),
            metadata={"m": 1},
            unique=Unique(by_queue=True),
        )
        changed = _schedule(
            cron="*/5 * * * *", timezone="Europe/Paris", missed_fire_policy="catch_up", job=job
        )
        [record] = store.register_schedules([changed])
        assert record.schedule == changed
        assert store.list_schedules() == [record]

    def test_a_due_fire_is_planned_and_enqueued_with_its_fire_time(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.register_schedules([_schedule()])
        first = store.plan_fires()
        assert first.plans == []
        assert first.next_fire_at == _at(clock, 1)
        clock.set(_at(clock, 1, 20))
        [plan] = store.plan_fires().plans
        assert plan.fires == (_at(clock, 1),)
        [job] = store.fire(plan) or []
        assert (job.kind, job.queue, job.args, job.state) == (
            "tick",
            "periodic",
            {"n": 1},
            JobState.AVAILABLE,
        )
        assert job.run_at == _at(clock, 1)
        assert job.metadata == {
            "periodic_name": "tick",
            "periodic_fire_at": _at(clock, 1).isoformat(),
        }
        [record] = store.list_schedules()
        assert (record.last_fire_at, record.next_fire_at) == (_at(clock, 1), _at(clock, 2))
        assert record.updated_at == clock.now()  # the fire moved it on
        assert store.plan_fires().plans == []

    def test_a_round_says_more_may_be_due_only_when_its_limit_cut_it_short(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.register_schedules([_schedule("a"), _schedule("b"), _schedule("c", "0 * * * *")])
        assert store.plan_fires().next_fire_at == _at(clock, 1)  # the earliest of them
        clock.set(_at(clock, 1))  # a and b are due, c only on the hour

        def planned(limit: int) -> tuple[int, bool]:
            found = store.plan_fires(limit=limit)
            return len(found.plans), found.more

        assert planned(1) == (1, True)
        assert planned(2) == (2, True)  # the limit was reached by due ones: maybe more
        assert planned(3) == (2, False)  # c is not due, so nothing after it is
        clock.set(_at(clock, 60))
        assert planned(5) == (3, False)  # all due, and fewer than the limit

    def test_a_plan_with_a_job_missing_for_a_fire_is_refused(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.register_schedules([_schedule()])
        clock.set(_at(clock, 1))
        [plan] = store.plan_fires().plans
        with pytest.raises(ValidationError, match="one job per fire"):
            store.fire(attrs.evolve(plan, jobs=()))
        with pytest.raises(ValidationError, match="at least one fire"):
            store.fire(attrs.evolve(plan, fires=(), jobs=()))
        assert store.list_jobs() == []

    def test_a_stale_plan_enqueues_nothing(self, store: ClaimStore, clock: ManualClock) -> None:
        """Two leaders planned the same fire: the compare-and-set lets exactly one through."""
        store.register_schedules([_schedule()])
        clock.set(_at(clock, 1))
        [plan] = store.plan_fires().plans
        [again] = store.plan_fires().plans
        assert again == plan
        assert store.fire(plan) is not None
        assert store.fire(again) is None
        assert len(store.list_jobs(kind="tick")) == 1
        [record] = store.list_schedules()
        assert record.next_fire_at == _at(clock, 2)

    def test_coalesce_enqueues_only_the_latest_missed_fire(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.register_schedules([_schedule()])
        clock.set(_at(clock, 5, 30))
        [plan] = store.plan_fires().plans
        assert plan.fires == (_at(clock, 5),)
        store.fire(plan)
        assert [j.run_at for j in store.list_jobs(kind="tick")] == [_at(clock, 5)]

    def test_catch_up_enqueues_every_missed_fire_in_bounded_rounds(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.register_schedules([_schedule(missed_fire_policy="catch_up")])
        missed = CATCH_UP_FIRES_MAX + 20
        start = clock.now()
        clock.set(start + timedelta(minutes=missed, seconds=10))
        fired: list[datetime] = []
        while round_ := store.plan_fires().plans:
            for plan in round_:
                assert len(plan.fires) <= CATCH_UP_FIRES_MAX
                fired.extend(job.run_at for job in store.fire(plan) or [])
        assert fired == [start + timedelta(minutes=m) for m in range(1, missed + 1)]

    def test_a_paused_schedule_plans_nothing_and_resumes_from_now(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.register_schedules([_schedule()])
        clock.set(_at(clock, 1))
        [plan] = store.plan_fires().plans
        paused = store.set_schedule_paused("tick", True)
        assert paused.paused
        assert store.fire(plan) is None, "a plan made before the pause must not fire"
        clock.set(_at(clock, 30, 5))
        assert store.plan_fires().plans == []
        [listed] = store.list_schedules()
        assert listed.paused
        assert store.register_schedules([_schedule()])[0].paused  # registering keeps a pause
        resumed = store.set_schedule_paused("tick", False)
        assert not resumed.paused
        assert resumed.next_fire_at == _at(clock, 31)  # what it missed while paused is not made up
        assert store.list_jobs(kind="tick") == []

    def test_a_paused_schedule_neither_wakes_a_round_nor_takes_a_place_in_it(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.register_schedules([_schedule("a"), _schedule("b", "0 * * * *")])
        store.set_schedule_paused("a", True)
        assert store.plan_fires().next_fire_at == _at(clock, 60)  # b's hour, not a's minute
        clock.set(_at(clock, 60))
        found = store.plan_fires(limit=1)
        assert [plan.name for plan in found.plans] == ["b"]

    def test_trigger_runs_the_job_now_and_leaves_the_schedule_alone(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        [before] = store.register_schedules([_schedule()])
        clock.advance(7)
        job = store.trigger_schedule("tick")
        assert job.state is JobState.AVAILABLE
        assert job.run_at == clock.now()
        assert job.metadata["periodic_name"] == "tick"
        assert store.list_schedules() == [before]

    def test_remove_deletes_the_schedule_and_keeps_its_jobs(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.register_schedules([_schedule()])
        store.trigger_schedule("tick")
        clock.set(_at(clock, 1))
        [plan] = store.plan_fires().plans
        store.remove_schedule("tick")
        assert store.list_schedules() == []
        assert store.fire(plan) is None
        assert len(store.list_jobs(kind="tick")) == 1

    def test_unknown_schedule_names_raise_schedule_not_found(self, store: ClaimStore) -> None:
        for action in (
            lambda: store.set_schedule_paused("nope", True),
            lambda: store.trigger_schedule("nope"),
            lambda: store.remove_schedule("nope"),
        ):
            with pytest.raises(ScheduleNotFound, match="'nope' not found"):
                action()

    def test_a_fire_whose_unique_key_is_held_is_skipped_and_the_schedule_moves_on(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        one_at_a_time = NewJob(kind="report", unique=Unique(by_args=False))
        store.register_schedules([_schedule(job=one_at_a_time)])
        clock.set(_at(clock, 1))
        [first] = store.fire(store.plan_fires().plans[0]) or []
        clock.set(_at(clock, 2))
        assert store.fire(store.plan_fires().plans[0]) == []  # the last run still holds the key
        assert [j.id for j in store.list_jobs(kind="report")] == [first.id]
        assert store.list_schedules()[0].next_fire_at == _at(clock, 3)

    def test_fire_times_follow_the_schedule_time_zone_across_dst(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        # Europe/Paris springs forward on 2030-03-31 at 02:00 (to 03:00)
        clock.set(datetime(2030, 3, 30, 12, tzinfo=timezone.utc))
        schedule = _schedule("paris", "30 2 * * *", timezone="Europe/Paris")
        [record] = store.register_schedules([schedule])
        # 02:30 does not exist that day: Debian cron's rule runs it once the clocks jump
        assert record.next_fire_at == datetime(2030, 3, 31, 1, 0, tzinfo=timezone.utc)
        clock.set(record.next_fire_at)
        [plan] = store.plan_fires().plans
        store.fire(plan)
        assert store.list_schedules()[0].next_fire_at == datetime(
            2030, 4, 1, 0, 30, tzinfo=timezone.utc
        )

    def test_a_schedule_refuses_what_it_cannot_run(self) -> None:
        for bad in (
            {"cron": "61 * * * *"},
            {"cron": "* * *"},
            {"timezone": "Mars/Olympus"},
            {"missed_fire_policy": "all"},
            {"job": NewJob(kind="x", run_at=datetime(2030, 1, 1, tzinfo=timezone.utc))},
        ):
            with pytest.raises(ValidationError):
                attrs.evolve(_schedule(), **bad)
