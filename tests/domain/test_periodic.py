"""The pure scheduling decisions: registering, pausing and planning fires
(``awa.domain.periodic``). The stores' schedule contract checks the same on every store."""

from datetime import datetime, timedelta, timezone
from typing import Any

import cronsim
import pytest

from awa.domain import NewJob, Schedule, ScheduleRecord, ValidationError
from awa.domain.periodic import (
    PERIODIC_FIRE_AT,
    PERIODIC_NAME,
    PERIODIC_TRIGGERED,
    plan_fires,
    register,
    set_paused,
    triggered_job,
)
from awa.domain.validation import INSTANT_MAX

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)


def _schedule(policy: str = "coalesce", cron: str = "* * * * *") -> Schedule:
    job = NewJob(kind="report", metadata={"team": "ops"})
    return Schedule(name="report", cron=cron, job=job, missed_fire_policy=policy)  # type: ignore[arg-type]


def test_a_fired_job_keeps_its_own_metadata_beside_the_fires() -> None:
    record = register(_schedule(), None, START)
    plan = plan_fires(record, START + MINUTE)
    assert plan is not None
    [job] = plan.jobs
    assert job.metadata == {
        "team": "ops",
        PERIODIC_NAME: "report",
        PERIODIC_FIRE_AT: (START + MINUTE).isoformat(),
    }
    triggered = triggered_job(record, START)
    assert triggered.metadata["team"] == "ops"
    assert triggered.metadata[PERIODIC_TRIGGERED] is True
    assert PERIODIC_TRIGGERED not in job.metadata


def test_catch_up_enqueues_every_missed_fire_and_coalesce_only_the_latest() -> None:
    later = START + 3 * MINUTE + timedelta(seconds=30)
    catch_up = plan_fires(register(_schedule("catch_up"), None, START), later)
    assert catch_up is not None
    assert catch_up.fires == (START + MINUTE, START + 2 * MINUTE, START + 3 * MINUTE)
    coalesce = plan_fires(register(_schedule(), None, START), later)
    assert coalesce is not None
    assert coalesce.fires == (START + 3 * MINUTE,)
    assert coalesce.following == START + 4 * MINUTE
    exactly = START + 3 * MINUTE  # a fire time itself is due, under either policy
    assert plan_fires(register(_schedule(), None, START), exactly).fires == (exactly,)  # type: ignore[union-attr]
    catching_up = plan_fires(register(_schedule("catch_up"), None, START), exactly)
    assert catching_up is not None
    assert catching_up.fires[-1] == exactly


class _SecondsCronSim(cronsim.CronSim):
    """cronsim before 2.8 (the newest on Python 3.10): a start's microseconds are dropped."""

    def __init__(self, expr: str, dt: datetime, **options: Any) -> None:
        super().__init__(expr, dt.replace(microsecond=0), **options)


@pytest.mark.parametrize("simulator", [cronsim.CronSim, _SecondsCronSim])
def test_a_fire_due_exactly_now_is_planned_whatever_cronsim_does_with_microseconds(
    simulator: type[cronsim.CronSim], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("awa.domain.periodic.CronSim", simulator)
    for cron, step in (("* * * * *", MINUTE), ("*/10 * * * * *", timedelta(seconds=10))):
        record = register(_schedule(cron=cron), None, START)
        exactly = START + 3 * step
        plan = plan_fires(record, exactly)
        assert plan is not None
        assert (plan.fires, plan.following) == ((exactly,), exactly + step)
        assert record.schedule.latest_at_or_before(exactly - timedelta(microseconds=1)) == (
            exactly - step
        )


def test_a_paused_schedule_plans_nothing_even_when_due() -> None:
    record = set_paused(register(_schedule(), None, START), True, START)
    assert record.paused
    assert plan_fires(record, START + 5 * MINUTE) is None


def test_pausing_or_resuming_to_the_same_state_changes_nothing() -> None:
    record = register(_schedule(), None, START)
    assert set_paused(record, False, START + 5 * MINUTE) is record
    paused = set_paused(record, True, START + MINUTE)
    assert set_paused(paused, True, START + 5 * MINUTE) is paused


def test_a_change_or_a_resume_records_when_it_happened() -> None:
    record = register(_schedule(), None, START)
    changed = register(_schedule(cron="*/5 * * * *"), record, START + MINUTE)
    assert changed.updated_at == START + MINUTE
    assert changed.created_at == START
    paused = set_paused(changed, True, START + 2 * MINUTE)
    assert paused.updated_at == START + 2 * MINUTE
    resumed = set_paused(paused, False, START + 3 * MINUTE)
    assert resumed.updated_at == START + 3 * MINUTE
    assert resumed.next_fire_at == START + 5 * MINUTE
    assert isinstance(resumed, ScheduleRecord)


def test_a_schedule_never_fires_past_the_latest_time_a_job_may_run() -> None:
    yearly = Schedule(name="yearly", cron="0 0 1 1 *", job=NewJob(kind="report"))
    almost = datetime(9998, 6, 1, tzinfo=timezone.utc)
    assert yearly.next_after(almost) == INSTANT_MAX  # 9999-01-01, the last fire it may make
    assert yearly.next_after(INSTANT_MAX) == INSTANT_MAX  # none after it: "never" again
    assert list(yearly.fires_after(INSTANT_MAX)) == []
    record = ScheduleRecord(
        schedule=yearly, next_fire_at=INSTANT_MAX, created_at=almost, updated_at=almost
    )
    assert plan_fires(record, INSTANT_MAX) is None


@pytest.mark.parametrize(
    "zone", ["localtime", "posixrules", "Factory", "right/UTC", "right/Europe/Paris", "posix/UTC"]
)
def test_a_time_zone_that_is_not_the_same_place_on_every_machine_is_refused(zone: str) -> None:
    # 'localtime' is each machine's own zone and loads wherever /usr/share/zoneinfo has it;
    # right/ counts leap seconds; posix/ is a second name for a canonical zone
    refused = rf"^time zone '{zone}' (is|counts) .*: use an IANA name"
    with pytest.raises(ValidationError, match=refused):
        Schedule(name="report", cron="0 3 * * *", job=NewJob(kind="report"), timezone=zone)


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/Argentina/Buenos_Aires"])
def test_a_canonical_time_zone_is_kept_as_given(zone: str) -> None:
    schedule = Schedule(name="report", cron="0 3 * * *", job=NewJob(kind="report"), timezone=zone)
    assert schedule.timezone == zone
