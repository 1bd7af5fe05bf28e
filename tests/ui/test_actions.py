"""Every action: a confirmation page that changes nothing, then the form, which calls the same
store verb as the CLI and says what it did in the CLI's words. Refusals are one line with the
status they mean, and change nothing. Each runs on the memory store and on PostgreSQL."""

from __future__ import annotations

import re

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import JobState, NewJob, Schedule
from awa.ports import BATCH_SIZE_MAX, ClaimStore, SummarizesQueues
from tests.ui.conftest import TestClient, act, csrf, failing, form_fields, poison


def result(page: object) -> str:
    text: str = page.text  # type: ignore[attr-defined]
    found = re.search(r'<p class="notice good" role="status" id="result">(.*?)</p>', text)
    assert found is not None, text
    return found.group(1).replace("&#39;", "'")


def refusal(page: object) -> str:
    text: str = page.text  # type: ignore[attr-defined]
    found = re.search(r'<p class="notice bad" role="alert">(.*?)</p>', text, re.DOTALL)
    assert found is not None, text
    return found.group(1).replace("&#39;", "'").replace("&#96;", "`")


def snapshot(store: ClaimStore) -> tuple[object, ...]:
    return (
        store.list_jobs(limit=BATCH_SIZE_MAX),
        store.list_dlq(limit=BATCH_SIZE_MAX),
        sorted(store.queue_stats(), key=lambda s: s.queue),
        store.list_schedules(),
    )


def dead_letters(store: ClaimStore, clock: ManualClock, *, media: int) -> None:
    """``media`` poison jobs dead-lettered on media, and one failed send on email."""
    for queue in ("media", "email"):
        store.set_dlq_enabled(queue, True)
    for _ in range(media):
        poison(store, clock)
    failing(store, "send", "email", "boom")


def test_cancel_a_job(ui: TestClient, store: ClaimStore) -> None:
    [job] = store.insert([NewJob(kind="send", queue="email")])
    store.claim("email", limit=1)
    before = snapshot(store)
    confirm = ui.get(f"/jobs/{job.id}/cancel")
    assert "Cancel job 1 (send on email), now running?" in confirm.text
    assert "Its running handler is signalled to stop." in confirm.text
    assert snapshot(store) == before  # asking changes nothing

    done = act(ui, f"/jobs/{job.id}/cancel")

    assert done.status_code == 200
    assert result(done) == (
        "job 1 (send on email) cancelled; state cancelled, attempt 1/25, run_lease 1"
    )
    assert store.get_job(job.id).state is JobState.CANCELLED


def test_cancel_of_a_finished_job_says_not_cancellable(ui: TestClient, store: ClaimStore) -> None:
    job = failing(store, "send", "email", "boom")
    before = snapshot(store)
    done = act(ui, f"/jobs/{job.id}/cancel")
    assert done.status_code == 409
    assert refusal(done) == (
        "job 1 is failed: not cancellable (only scheduled, available, running,"
        " waiting_external, retryable jobs are); nothing changed"
    )
    assert snapshot(store) == before


def test_retry_a_failed_job(ui: TestClient, store: ClaimStore) -> None:
    job = failing(store, "send", "email", "boom")
    done = act(ui, f"/jobs/{job.id}/retry")
    assert result(done) == (
        "job 1 (send on email) retried; state available, attempt 0/25, run_lease 1"
    )
    assert store.get_job(job.id).errors == job.errors


def test_retry_of_a_job_still_running_is_a_409(ui: TestClient, store: ClaimStore) -> None:
    [job] = store.insert([NewJob(kind="send")])
    store.claim("default", limit=1)
    before = snapshot(store)
    done = act(ui, f"/jobs/{job.id}/retry")
    assert done.status_code == 409
    assert "is running" in refusal(done)
    assert snapshot(store) == before


def test_pause_and_resume_a_queue(ui: TestClient, store: ClaimStore) -> None:
    store.insert([NewJob(kind="k", queue="media")])
    confirm = ui.get("/queues/media/pause")
    assert "Workers stop claiming from it; running attempts, inserts and rescue go on." in (
        confirm.text
    )
    paused = act(ui, "/queues/media/pause")
    assert result(paused) == (
        "queue media paused: no new claims (running attempts, inserts and rescue go on)"
    )
    assert store.claim("media", limit=1) == []
    resumed = act(ui, "/queues/media/resume")
    assert result(resumed) == "queue media resumed: workers claim from it again"
    assert len(store.claim("media", limit=1)) == 1


def test_a_bad_queue_name_is_refused_before_anything_is_asked(ui: TestClient) -> None:
    page = ui.get("/queues/NOT%20OK/pause")
    assert page.status_code == 400
    assert "invalid queue name" in refusal(page)


def test_retry_one_dead_letter(ui: TestClient, store: ClaimStore, clock: ManualClock) -> None:
    store.set_dlq_enabled("media", True)
    job = poison(store, clock)
    confirm = ui.get(f"/dlq/retry?id={job.id}")
    assert "Dead-lettered as heartbeat_stale." in confirm.text
    done = act(ui, f"/dlq/retry?id={job.id}")
    assert result(done) == (
        "job 1 (transcode on media) back from the dead-letter queue; state available,"
        " attempt 0/3, run_lease 3"
    )
    assert store.list_dlq() == []


def test_dlq_retry_of_a_job_elsewhere_says_where_it_is(ui: TestClient, store: ClaimStore) -> None:
    job = failing(store, "send", "email", "boom")  # failed, on a queue without a DLQ
    page = ui.get(f"/dlq/retry?id={job.id}")
    assert page.status_code == 409
    assert refusal(page) == (
        "job 1 is not in the dead-letter queue (it is failed); `awa job retry 1` retries failed"
        " and cancelled jobs"
    )
    assert ui.get("/dlq/retry?id=77").status_code == 404


def test_retry_the_dead_letters_of_one_queue_and_kind(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    dead_letters(store, clock, media=2)
    confirm = ui.get("/dlq/retry?queue=media&kind=transcode")
    assert "Retry 2 dead-letter entries (queue=media, kind=transcode)?" in confirm.text

    done = act(ui, "/dlq/retry?queue=media&kind=transcode")

    assert result(done) == (
        "retried 2 dead-letter job(s) (queue=media, kind=transcode) with a fresh attempt budget"
    )
    assert [e.job.queue for e in store.list_dlq()] == ["email"]


def test_purge_the_dead_letters_of_a_queue(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    dead_letters(store, clock, media=1)
    confirm = ui.get("/dlq/purge?queue=media")
    assert "Permanently delete 1 dead-letter entries (queue=media)?" in confirm.text
    done = act(ui, "/dlq/purge?queue=media")
    assert result(done) == "purged 1 dead-letter entry (queue=media)"
    assert [e.job.queue for e in store.list_dlq()] == ["email"]


def test_bulk_actions_on_every_entry_need_all(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    dead_letters(store, clock, media=1)
    before = snapshot(store)
    for path in ("/dlq/retry", "/dlq/purge"):
        asked = ui.get(path)
        assert asked.status_code == 400
        assert "give a queue and/or a kind, or choose every queue and kind" in refusal(asked)
        posted = ui.post(path, data={**csrf(ui), "queue": "", "kind": ""})
        assert posted.status_code == 400
    assert snapshot(store) == before
    confirm = ui.get("/dlq/purge?all=1")
    assert "Permanently delete 2 dead-letter entries (every queue and kind)?" in confirm.text
    done = act(ui, "/dlq/purge?all=1")
    assert result(done) == "purged 2 dead-letter entries (every queue and kind)"
    assert store.list_dlq() == []


def test_count_now_refreshes_the_summary(ui: TestClient, store: ClaimStore) -> None:
    assert isinstance(store, SummarizesQueues)
    store.insert([NewJob(kind="k", queue="q")])
    counted = ui.post("/queues/count", data=csrf(ui))
    assert (counted.status_code, counted.headers["location"]) == (303, "/")
    assert store.queue_summary() is not None
    assert 'id="queue-q"' in ui.get("/").text


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/jobs/1/cancel"),
        ("POST", "/jobs/1/cancel"),
        ("GET", "/jobs/1/retry"),
        ("POST", "/jobs/1/retry"),
        ("GET", "/queues/media/pause"),
        ("POST", "/queues/media/pause"),
        ("GET", "/queues/media/resume"),
        ("POST", "/queues/media/resume"),
        ("GET", "/queues/media/limits"),
        ("POST", "/queues/media/limits"),
        ("GET", "/dlq/retry?id=1"),
        ("POST", "/dlq/retry"),
        ("GET", "/dlq/purge?all=1"),
        ("POST", "/dlq/purge"),
        ("POST", "/queues/count"),
        ("GET", "/periodic/nightly/pause"),
        ("POST", "/periodic/nightly/pause"),
        ("GET", "/periodic/nightly/resume"),
        ("POST", "/periodic/nightly/resume"),
        ("GET", "/periodic/nightly/trigger"),
        ("POST", "/periodic/nightly/trigger"),
        ("GET", "/periodic/nightly/remove"),
        ("POST", "/periodic/nightly/remove"),
    ],
)
def test_a_read_only_dashboard_refuses_every_action(
    dashboard: object, store: ClaimStore, clock: ManualClock, method: str, path: str
) -> None:
    ui: TestClient = dashboard(read_only=True)  # type: ignore[operator]
    store.set_dlq_enabled("media", True)
    poison(store, clock)
    store.insert([NewJob(kind="k", queue="media")])
    store.register_schedules([Schedule(name="nightly", cron="0 3 * * *", job=NewJob(kind="r"))])
    before = snapshot(store)
    fields = form_fields(ui.get("/").text)
    data = {**fields, "id": "1", "queue": "media", "all": "1", "concurrency_limit": "1"}
    answer = ui.get(path) if method == "GET" else ui.post(path, data=data)
    assert answer.status_code == 403
    assert refusal(answer) == "this dashboard is read-only: nothing was changed"
    assert snapshot(store) == before
    for page in ("/", "/jobs", "/jobs/1", "/jobs/2", "/dlq", "/periodic"):
        shown = ui.get(page).text
        assert "read-only" in shown
        assert not re.search(
            r'href="[^"]*/(cancel|retry|pause|resume|limits|purge|trigger|remove)\b', shown
        ), page
        assert 'method="post"' not in shown


def test_each_action_leaves_one_log_line_saying_what_was_done(
    ui: TestClient, store: ClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.insert([NewJob(kind="k", queue="media")])
    with caplog.at_level("INFO", logger="awa.ui"):
        act(ui, "/queues/media/pause")
    assert [r.getMessage() for r in caplog.records if r.name == "awa.ui"] == [
        "dashboard action from 127.0.0.1: queue media paused: no new claims (running attempts,"
        " inserts and rescue go on)"
    ]
