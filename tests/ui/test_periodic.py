"""The periodic schedules page and its actions: every schedule with its timing, the job it
inserts and its next and last fire; pause, resume, trigger and remove, each a confirmation that
changes nothing and then the same store verb as ``awa cron``, in its words. Refusals are one
line. Each runs on the memory store and on PostgreSQL."""

from __future__ import annotations

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import JobState, NewJob, Schedule
from awa.domain.periodic import PERIODIC_NAME, PERIODIC_TRIGGERED
from awa.ports import ClaimStore
from tests.ui.conftest import TestClient, act, csrf
from tests.ui.test_actions import refusal, result, snapshot
from tests.ui.test_pages import cells, text


def nightly() -> Schedule:
    return Schedule(
        name="nightly",
        cron="0 3 * * *",
        timezone="Europe/Paris",
        missed_fire_policy="catch_up",
        job=NewJob(kind="report", queue="reports", priority=1, args={"day": 1}),
    )


def every_minute() -> Schedule:
    return Schedule(name="tick.1m", cron="* * * * *", job=NewJob(kind="tick"))


def fire_due(store: ClaimStore) -> None:
    """What the maintenance leader does: fire every schedule that is due."""
    for plan in store.plan_fires().plans:
        store.fire(plan)


def test_periodic_page_lists_every_schedule_with_its_timing_job_and_fires(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    # the clock starts at 2030-01-01 00:00 UTC, 01:00 in Paris
    store.register_schedules([nightly(), every_minute()])
    clock.advance(60)
    fire_due(store)  # tick.1m fires at 00:01
    clock.advance(30)
    store.set_schedule_paused("nightly", True)

    page = ui.get("/periodic")

    assert page.status_code == 200
    assert 'href="/periodic" aria-current="page"' in page.text
    assert cells(page.text, "schedule-nightly")[:6] == [
        "nightly paused",
        "0 3 * * * At 03:00 every day (Europe/Paris)",
        "catch_up",
        "report on reports priority 1",
        "-",  # paused: no next fire, as `awa cron list` shows it
        "-",  # never fired
    ]
    tick = cells(page.text, "schedule-tick.1m")
    assert tick[:6] == [
        "tick.1m",
        "* * * * * Every minute (UTC)",
        "coalesce",
        "tick on default priority 2",
        "in 30s",
        "30s ago",
    ]
    assert 'datetime="2030-01-01T00:02:00+00:00"' in page.text  # the exact time, for a tooltip
    assert "Resume" in cells(page.text, "schedule-nightly")[6]
    assert "Pause" in tick[6]


def test_periodic_page_without_schedules_says_where_they_come_from(ui: TestClient) -> None:
    page = ui.get("/periodic")
    assert page.status_code == 200
    assert "No periodic schedules: a process registers its schedules" in text(page.text)


def test_pause_and_resume_a_schedule(ui: TestClient, store: ClaimStore, clock: ManualClock) -> None:
    store.register_schedules([every_minute()])
    before = snapshot(store)
    confirm = ui.get("/periodic/tick.1m/pause")
    assert "Pause schedule tick.1m (Every minute (UTC))?" in text(confirm.text)
    assert snapshot(store) == before  # asking changes nothing

    paused = act(ui, "/periodic/tick.1m/pause")

    assert result(paused) == "schedule tick.1m paused: no process fires it until it is resumed"
    [record] = store.list_schedules()
    assert record.paused
    clock.advance(300)
    assert store.plan_fires().plans == []  # nothing fires while paused

    resumed = act(ui, "/periodic/tick.1m/resume")

    assert result(resumed) == "schedule tick.1m resumed; next fire 2030-01-01 00:06:00Z"
    assert not store.list_schedules()[0].paused
    assert store.list_jobs() == []  # the five minutes missed while paused are not made up


def test_trigger_inserts_one_run_and_the_timing_stays(ui: TestClient, store: ClaimStore) -> None:
    store.register_schedules([nightly()])
    [before] = store.list_schedules()
    confirm = ui.get("/periodic/nightly/trigger")
    assert "Insert one run of report on reports now, for schedule nightly?" in text(confirm.text)
    assert "the next fire stays at 2030-01-01 02:00:00Z." in text(confirm.text)
    assert store.list_jobs() == []

    done = act(ui, "/periodic/nightly/trigger")

    assert result(done) == (
        "job 1 (report on reports) inserted for schedule nightly; state available,"
        " attempt 0/25, run_lease 0"
    )
    [job] = store.list_jobs()
    assert (job.kind, job.queue, job.priority, job.args) == ("report", "reports", 1, {"day": 1})
    assert job.metadata[PERIODIC_NAME] == "nightly"
    assert job.metadata[PERIODIC_TRIGGERED] is True
    assert job.state is JobState.AVAILABLE
    assert store.list_schedules() == [before]
    assert 'href="/jobs/1"' in done.text


def test_remove_a_schedule(ui: TestClient, store: ClaimStore) -> None:
    store.register_schedules([nightly(), every_minute()])
    confirm = ui.get("/periodic/nightly/remove")
    assert "Delete schedule nightly (At 03:00 every day (Europe/Paris))?" in text(confirm.text)
    assert "To stop it firing for a while, pause it instead." in confirm.text
    assert 'class="confirm danger"' in confirm.text

    done = act(ui, "/periodic/nightly/remove")

    assert result(done) == (
        "schedule nightly removed (a process that declares it adds it back when it starts;"
        " remove it from the code too)"
    )
    assert [r.name for r in store.list_schedules()] == ["tick.1m"]
    assert 'id="schedule-nightly"' not in ui.get("/periodic").text


@pytest.mark.parametrize("verb", ["pause", "resume", "trigger", "remove"])
def test_an_unknown_schedule_is_a_404_and_a_bad_name_a_400(
    ui: TestClient, store: ClaimStore, verb: str
) -> None:
    store.register_schedules([nightly()])
    before = snapshot(store)
    for answer in (
        ui.get(f"/periodic/nope/{verb}"),
        ui.post(f"/periodic/nope/{verb}", data=csrf(ui)),
    ):
        assert answer.status_code == 404
        assert refusal(answer) == "periodic schedule 'nope' not found"
    for answer in (
        ui.get(f"/periodic/-bad name/{verb}"),
        ui.post(f"/periodic/-bad name/{verb}", data=csrf(ui)),
    ):
        assert answer.status_code == 400
        assert refusal(answer).startswith("invalid schedule name '-bad name'")
    assert snapshot(store) == before
