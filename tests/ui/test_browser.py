"""The dashboard in a real browser (Debian's Chromium, driven by Playwright) against PostgreSQL:
the incident story of the runbook (a poison job, its repeated cause, the queue paused, the dead
letter redriven), every other action, the periodic schedules' actions, live refresh, and what
must stay inert or refused: a script in a job's args, actions in a read-only dashboard, and
anything without the token.

The server is uvicorn in a thread on 127.0.0.1; the store runs on a manual clock, so that the
test plays the dead worker and maintenance without waiting. With ``AWA_UI_SCREENSHOTS=DIR``
the story and the periodic test save the queues, job, dead-letter and periodic pages there as
PNGs (``docs/ui.md`` shows them, from ``docs/images/ui``); without it nothing is written.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.domain import AttemptEnd, JobState, NewJob, Schedule
from awa.ui import create_app
from tests.http.conftest import serving
from tests.ui.browser import launched_browser, screenshot
from tests.ui.conftest import failing, poison
from tests.ui.test_security import HOSTILE, hostile_store

pytestmark = [pytest.mark.postgres, pytest.mark.browser]

TOKEN = "browser-test-token-0123456789"
WAIT_MS = 15_000  # a bound for each wait on the page, never a pause


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(pg_clean_url: str, clock: ManualClock) -> Iterator[PostgresStore]:
    pg = PostgresStore(pg_clean_url, clock=clock, rng=random.Random(7))
    try:
        yield pg
    finally:
        pg.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("dialog", lambda dialog: errors.append(f"a dialog opened: {dialog.message}"))
    yield opened
    context.close()
    assert errors == [], errors


def shoot(page: Any, name: str) -> None:
    """With ``AWA_UI_SCREENSHOTS=DIR``, save the page as ``DIR/NAME.png``; nothing otherwise."""
    folder = os.environ.get("AWA_UI_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.png").write_bytes(screenshot(page))


def confirm(page: Any, expected_question: str) -> str:
    """On a confirmation page: check what it asks, press the button, return the result line."""
    from playwright.sync_api import expect

    expect(page.locator("form.confirm .question")).to_have_text(expected_question)
    page.click("#confirm")
    result = page.locator("#result")
    expect(result).to_be_visible()
    return str(result.inner_text())


def test_the_incident_story_a_poison_job_recognised_paused_and_redriven(
    page: Any, store: PostgresStore, clock: ManualClock
) -> None:
    from playwright.sync_api import expect

    store.set_dlq_enabled("media", True)
    job = poison(store, clock)  # three attempts, each worker died: dead-lettered
    store.insert(
        [NewJob(kind="transcode", queue="media", args={"video": f"{n}.mp4"}) for n in "ab"]
    )
    store.summarize_queues()

    with serving(create_app(store, token=TOKEN)) as url:
        # sign in
        page.goto(url + "/")
        expect(page).to_have_url(re.compile(r"/login\?next=%2F$"))
        page.fill("#token", TOKEN)
        page.click("#sign-in")
        expect(page.locator("h1")).to_have_text("Queues")

        # the alert: a dead letter on media
        media = page.locator("#queue-media")
        expect(media.locator("td").nth(8)).to_contain_text("1")
        expect(media.locator("td").nth(8)).to_contain_text("routing on")
        shoot(page, "queues")
        media.get_by_role("link", name="1", exact=True).last.click()
        expect(page.locator("#groups")).to_contain_text("heartbeat_stale")
        shoot(page, "dlq")

        # recognise it: the same cause, attempt after attempt, and the diagnosis
        page.locator(f"#entry-{job.id}").get_by_role("link", name=str(job.id)).click()
        expect(page.locator("h1")).to_contain_text(f"Job {job.id}")
        expect(page.locator("strong.end")).to_have_text([AttemptEnd.HEARTBEAT_STALE.text] * 3)
        expect(page.locator("#diagnosis")).to_contain_text("look at the process, not the handler")
        expect(page.locator("#dead-letter")).to_contain_text("heartbeat_stale")
        shoot(page, "job")

        # stop the kind
        page.get_by_role("link", name="Queues").click()
        page.locator("#queue-media").get_by_role("link", name="Pause").click()
        said = confirm(page, "Pause queue media?")
        assert said.startswith("queue media paused: no new claims")
        page.get_by_role("link", name="the queues").click()
        expect(page.locator("#queue-media")).to_contain_text("paused")
        assert store.claim("media", limit=1) == []

        # redrive after the fix
        page.get_by_role("link", name="Dead letters").click()
        page.locator("#groups").get_by_role("link", name="Retry").click()
        said = confirm(page, "Retry 1 dead-letter entries (queue=media, kind=transcode)?")
        assert said == (
            "retried 1 dead-letter job(s) (queue=media, kind=transcode) with a fresh attempt budget"
        )
        page.get_by_role("link", name="the queues").click()
        page.locator("#queue-media").get_by_role("link", name="Resume").click()
        assert confirm(page, "Resume queue media?") == (
            "queue media resumed: workers claim from it again"
        )
        page.goto(f"{url}/jobs/{job.id}")
        expect(page.locator("h1 .state")).to_have_text("available")
        expect(page.locator("#attempt-next")).to_contain_text(
            "attempt 1 round 2: a retry gave a fresh attempt budget"
        )

    redriven = store.get_job(job.id)
    assert (redriven.state, redriven.attempt, redriven.run_lease) == (JobState.AVAILABLE, 0, 3)
    assert store.list_dlq() == []
    assert len(store.claim("media", limit=10)) == 3


def test_every_other_action_from_its_button(
    page: Any, store: PostgresStore, clock: ManualClock
) -> None:
    from playwright.sync_api import expect

    store.set_dlq_enabled("media", True)
    first, second = poison(store, clock), poison(store, clock)
    failed = failing(store, "send", "email", "ValueError: no such address")
    [running] = store.insert([NewJob(kind="send", queue="email")])
    store.claim("email", limit=1)

    with serving(create_app(store)) as url:
        # count now, when nothing has counted the queues
        page.goto(url + "/")
        expect(page.locator("#counted")).to_contain_text("have not been counted yet")
        page.click("#count-now")
        expect(page.locator("#queue-email")).to_be_visible()

        # cancel a running job
        page.goto(f"{url}/jobs/{running.id}")
        page.click("#cancel")
        assert confirm(page, f"Cancel job {running.id} (send on email), now running?") == (
            f"job {running.id} (send on email) cancelled; state cancelled, attempt 1/25,"
            " run_lease 1"
        )

        # retry a failed job
        page.goto(f"{url}/jobs/{failed.id}")
        page.click("#retry")
        said = confirm(page, f"Run job {failed.id} (send on email) again?")
        assert said.startswith(f"job {failed.id} (send on email) retried; state available")

        # retry one dead letter from its page
        page.goto(f"{url}/jobs/{first.id}")
        page.click("#dlq-retry")
        said = confirm(page, f"Move job {first.id} (transcode on media) back to available?")
        assert "back from the dead-letter queue" in said

        # purge the rest of media's dead letters
        page.goto(url + "/dlq?queue=media")
        page.click("#purge-matching")
        said = confirm(page, "Permanently delete 1 dead-letter entries (queue=media)?")
        assert said == "purged 1 dead-letter entry (queue=media)"

    assert store.get_job(running.id).state is JobState.CANCELLED
    assert store.get_job(failed.id).state is JobState.AVAILABLE
    assert store.get_job(first.id).state is JobState.AVAILABLE
    assert store.list_dlq() == []
    with pytest.raises(Exception, match="not found"):
        store.get_job(second.id)


def test_periodic_schedules_paused_triggered_and_removed_from_their_buttons(
    page: Any, store: PostgresStore, clock: ManualClock
) -> None:
    from playwright.sync_api import expect

    store.register_schedules(
        [
            Schedule(
                name="nightly-report",
                cron="0 3 * * *",
                timezone="Europe/Paris",
                job=NewJob(kind="report", queue="reports"),
            ),
            Schedule(
                name="sync-prices",
                cron="*/15 * * * *",
                missed_fire_policy="catch_up",
                job=NewJob(kind="sync_prices", queue="default", priority=1),
            ),
            Schedule(name="old-cleanup", cron="0 0 * * 0", job=NewJob(kind="cleanup")),
        ]
    )
    clock.advance(15 * 60)
    for plan in store.plan_fires().plans:  # the leader fires sync-prices at 00:15
        store.fire(plan)
    clock.advance(4 * 60)

    with serving(create_app(store)) as url:
        page.goto(url + "/")
        page.get_by_role("link", name="Periodic").click()
        expect(page.locator("h1")).to_have_text("Periodic schedules")
        sync = page.locator("#schedule-sync-prices")
        expect(sync).to_contain_text("Every 15th minute of every hour (UTC)")
        expect(sync.locator("td").nth(3)).to_have_text("in 11m")
        expect(sync.locator("td").nth(4)).to_have_text("4m ago")

        # pause the nightly report for the night
        page.locator("#schedule-nightly-report").get_by_role("link", name="Pause").click()
        said = confirm(page, "Pause schedule nightly-report (At 03:00 every day (Europe/Paris))?")
        assert said == "schedule nightly-report paused: no process fires it until it is resumed"
        page.get_by_role("link", name="the periodic schedules").click()
        nightly = page.locator("#schedule-nightly-report")
        expect(nightly).to_contain_text("paused")
        expect(nightly.get_by_role("link", name="Resume")).to_be_visible()
        shoot(page, "periodic")

        # run the price sync once now, then look at the job it inserted
        sync.get_by_role("link", name="Trigger").click()
        said = confirm(
            page, "Insert one run of sync_prices on default now, for schedule sync-prices?"
        )
        assert said.startswith("job 2 (sync_prices on default) inserted for schedule sync-prices")
        page.get_by_role("link", name="job 2").click()
        expect(page.locator("#metadata")).to_contain_text("periodic_triggered")

        # remove a schedule the code no longer declares, and resume the report
        page.get_by_role("link", name="Periodic").click()
        page.locator("#schedule-old-cleanup").get_by_role("link", name="Remove").click()
        said = confirm(page, "Delete schedule old-cleanup (At 00:00 on Sunday (UTC))?")
        assert said.startswith("schedule old-cleanup removed")
        page.get_by_role("link", name="the periodic schedules").click()
        expect(page.locator("#schedule-old-cleanup")).to_have_count(0)
        nightly.get_by_role("link", name="Resume").click()
        said = confirm(page, "Resume schedule nightly-report (At 03:00 every day (Europe/Paris))?")
        assert said == "schedule nightly-report resumed; next fire 2030-01-01 02:00:00Z"

    records = {r.name: r for r in store.list_schedules()}
    assert sorted(records) == ["nightly-report", "sync-prices"]
    assert not records["nightly-report"].paused
    assert [(j.kind, j.metadata.get("periodic_triggered")) for j in store.list_jobs()] == [
        ("sync_prices", True),
        ("sync_prices", None),
    ]


def test_a_script_in_args_stays_text(page: Any) -> None:
    from playwright.sync_api import expect

    with serving(create_app(hostile_store())) as url:
        for path in ("/jobs/1", "/jobs", "/dlq", "/"):
            page.goto(url + path)
            assert page.evaluate("window.__xss") is None, path
            expect(page.locator("main script")).to_have_count(0)
        page.goto(url + "/jobs/1")
        args = page.locator("#args pre").inner_text()
        for value in ("<script>window.__xss = 1</script>", "</pre></main><script>", "{{ 7 * 7 }}"):
            assert value in args
        assert HOSTILE["bidi"] in args
        page.hover("#args pre")
        page.locator("#timeline details summary").click()
        expect(page.locator("#timeline")).to_contain_text("<script>x</script>")
        assert page.evaluate("window.__xss") is None


def test_a_read_only_dashboard_offers_no_action_and_refuses_one_posted_anyway(
    page: Any, store: PostgresStore, clock: ManualClock
) -> None:
    from playwright.sync_api import expect

    store.set_dlq_enabled("media", True)
    job = poison(store, clock)
    store.summarize_queues()
    with serving(create_app(store, read_only=True)) as url:
        for path in ("/", f"/jobs/{job.id}", "/dlq"):
            page.goto(url + path)
            expect(page.locator(".read-only")).to_have_text("read-only")
            expect(page.locator("main a.button, main form[method=post]")).to_have_count(0)
        answer = page.request.post(url + "/dlq/retry", form={"id": str(job.id)})
        assert answer.status == 403
        page.goto(url + "/queues/media/pause")
        expect(page.locator("[role=alert]")).to_have_text(
            "this dashboard is read-only: nothing was changed"
        )
    assert store.get_dlq_entry(job.id) is not None


def test_without_the_token_nothing_is_shown_or_changed(
    page: Any, store: PostgresStore, clock: ManualClock
) -> None:
    from playwright.sync_api import expect

    store.set_dlq_enabled("media", True)
    job = poison(store, clock)
    with serving(create_app(store, token=TOKEN)) as url:
        for path in ("/", f"/jobs/{job.id}", "/dlq", "/queues/media/pause"):
            page.goto(url + path)
            expect(page.locator("h1")).to_have_text("Sign in")
            expect(page.locator("body")).not_to_contain_text("transcode")
        for path in ("/queues/media/pause", "/dlq/purge", "/dlq/retry", f"/jobs/{job.id}/cancel"):
            answer = page.request.post(url + path, form={"all": "1", "id": str(job.id)})
            assert answer.status == 401, path
        page.fill("#token", "a wrong token, long enough")
        page.click("#sign-in")
        expect(page.locator("[role=alert]")).to_contain_text("not the dashboard's token")
    assert store.get_dlq_entry(job.id) is not None
    assert not any(s.paused for s in store.queue_stats())


def test_open_pages_refresh_themselves_until_switched_off(page: Any, store: PostgresStore) -> None:
    from playwright.sync_api import expect

    store.insert([NewJob(kind="k", queue="q")])
    store.summarize_queues()
    with serving(create_app(store, live_refresh_s=0.2)) as url:
        page.goto(url + "/")
        available = page.locator("#queue-q td").nth(1)
        expect(available).to_have_text("1")
        store.insert([NewJob(kind="k", queue="q")])
        store.summarize_queues()
        expect(available).to_have_text("2")  # no reload: the page fetched itself
        expect(page.locator("#live-status")).to_contain_text("updated")
        page.click("#live-toggle")
        expect(page.locator("#live-toggle")).to_have_text("live: off")
        store.insert([NewJob(kind="k", queue="q")])
        store.summarize_queues()
        page.wait_for_timeout(1000)  # five refresh periods with refresh off
        expect(available).to_have_text("2")
        page.reload()
        expect(page.locator("#live-toggle")).to_have_text("live: off")  # remembered
        expect(page.locator("#queue-q td").nth(1)).to_have_text("3")
        page.click("#live-toggle")
