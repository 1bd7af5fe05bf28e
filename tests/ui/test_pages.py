"""The pages show what the store holds, in the domain's and the CLI's words: the queues from
the summary, jobs filtered and paged, one job's attempts and why each ended, the dead letters
by queue, kind and reason. Each runs on the memory store and on PostgreSQL."""

from __future__ import annotations

import html as html_lib
import re
from datetime import timedelta

from awa.adapters.memory import ManualClock
from awa.domain import (
    AttemptEnd,
    Cancel,
    Complete,
    Fail,
    JobState,
    NewJob,
    RescueCause,
    WaitForCallback,
)
from awa.domain.values import CallbackToken
from awa.operations.diagnosis import diagnose
from awa.ports import Applied, ClaimStore, Finish, Heartbeat, SummarizesQueues
from tests.ui.conftest import TestClient, failing, poison


def text(html: str) -> str:
    """What a person reads: the tags dropped, entities decoded, whitespace collapsed."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def cells(html: str, row_id: str) -> list[str]:
    """The text of each cell of the table row ``row_id``."""
    row = re.search(rf'<tr id="{row_id}"[^>]*>(.*?)</tr>', html, re.DOTALL)
    assert row is not None, f"no row {row_id}"
    found = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row.group(1), re.DOTALL)
    return [" ".join(re.sub(r"<[^>]+>", " ", cell).split()) for cell in found]


# -- the queues --------------------------------------------------------------------------------


def test_queues_page_says_when_nothing_has_counted_the_queues(
    ui: TestClient, store: ClaimStore
) -> None:
    store.insert([NewJob(kind="k", queue="q")])
    page = ui.get("/")
    assert page.status_code == 200
    assert "have not been counted yet" in page.text
    assert 'id="count-now"' in page.text
    assert 'id="queue-q"' not in page.text  # nothing counted, nothing shown


def test_queues_page_shows_the_summary_with_settings_of_now(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    assert isinstance(store, SummarizesQueues)
    store.set_dlq_enabled("media", True)
    poison(store, clock)
    failing(store, "k", "email", "boom")
    store.insert([NewJob(kind="k", queue="email")])
    [claimed] = store.claim("email", limit=1)
    store.finish([Finish(claimed.lease, Complete())])
    store.insert([NewJob(kind="k", queue="email") for _ in range(2)])
    store.summarize_queues()
    clock.advance(65)
    store.pause_queue("email")  # after the count: shown at once all the same

    page = ui.get("/")

    assert "Counted 1m ago by the maintenance leader: no leader has counted" in text(page.text)
    email = cells(page.text, "queue-email")
    # queue, 8 states, dead letters, oldest waiting, ended (completed/failed/cancelled)
    assert email[0] == "email paused"
    assert email[1:9] == ["0", "2", "0", "0", "0", "1", "1", "0"]
    assert email[9] == "0 routing off"
    assert email[11] == "1 / 1 / 0"
    media = cells(page.text, "queue-media")
    assert media[9] == "1 routing on"
    assert 'href="/dlq?queue=media"' in page.text
    assert 'href="/jobs?queue=email&amp;state=available"' in page.text
    assert 'href="/queues/email/resume"' in page.text
    assert 'href="/queues/media/pause"' in page.text


def test_a_fresh_summary_is_not_called_stale(ui: TestClient, store: ClaimStore) -> None:
    assert isinstance(store, SummarizesQueues)
    store.insert([NewJob(kind="k", queue="q")])
    store.summarize_queues()
    page = ui.get("/")
    assert "Counted 0s ago by the maintenance leader." in text(page.text)
    assert 'id="count-now"' not in page.text


# -- the jobs ----------------------------------------------------------------------------------


def test_jobs_page_filters_by_state_queue_kind_and_tag(ui: TestClient, store: ClaimStore) -> None:
    store.insert(
        [
            NewJob(kind="send", queue="email", tags=("vip",)),
            NewJob(kind="send", queue="email"),
            NewJob(kind="resize", queue="media", tags=("vip",)),
        ]
    )
    store.claim("media", limit=1)

    def listed(query: str) -> list[int]:
        page = ui.get(f"/jobs{query}")
        assert page.status_code == 200, page.text
        return [int(i) for i in re.findall(r'<tr id="job-(\d+)"', page.text)]

    assert listed("") == [3, 2, 1]  # newest first
    assert listed("?queue=email") == [2, 1]
    assert listed("?kind=resize") == [3]
    assert listed("?tag=vip") == [3, 1]
    assert listed("?state=running") == [3]
    assert listed("?state=available&queue=email&tag=vip") == [1]
    assert listed("?queue=nobody") == []


def test_jobs_page_pages_back_from_the_newest(ui: TestClient, store: ClaimStore) -> None:
    store.insert([NewJob(kind="k") for _ in range(60)])
    first = ui.get("/jobs")
    ids = [int(i) for i in re.findall(r'<tr id="job-(\d+)"', first.text)]
    assert ids == list(range(60, 10, -1))
    older = re.search(r'<a href="([^"]+)" id="older">', first.text)
    assert older is not None
    assert older.group(1) == "/jobs?before=11"
    second = ui.get(older.group(1).replace("&amp;", "&"))
    assert [int(i) for i in re.findall(r'<tr id="job-(\d+)"', second.text)] == list(
        range(10, 0, -1)
    )
    assert 'id="older"' not in second.text
    assert 'id="newest"' in second.text
    small = ui.get("/jobs?limit=25&queue=default")
    assert 'href="/jobs?queue=default&amp;limit=25&amp;before=36" id="older"' in small.text


def test_jobs_page_opens_a_job_by_id(ui: TestClient, store: ClaimStore) -> None:
    store.insert([NewJob(kind="k")])
    jump = ui.get("/jobs?id=1")
    assert (jump.status_code, jump.headers["location"]) == (303, "/jobs/1")


def test_bad_filters_get_one_line_and_a_400(ui: TestClient) -> None:
    for query, words in (
        ("?state=bogus", "unknown job state"),
        ("?queue=NOT%20VALID", "invalid queue name"),
        ("?kind=1bad", "invalid job kind"),
        ("?tag=" + "x" * 101, "tag"),
        ("?before=-1", "before must be a whole number"),
        ("?limit=7", "limit must be one of"),
        ("?id=abc", "job id must be a whole number"),
    ):
        page = ui.get(f"/jobs{query}")
        assert page.status_code == 400, query
        [alert] = re.findall(r'<p class="notice bad" role="alert">(.*?)</p>', page.text, re.DOTALL)
        assert words in alert
        assert "\n" not in alert


def test_an_unknown_job_is_a_404(ui: TestClient) -> None:
    page = ui.get("/jobs/4242")
    assert page.status_code == 404
    assert "job 4242 not found" in page.text
    assert ui.get(f"/jobs/{2**63}").status_code == 400


# -- one job -----------------------------------------------------------------------------------


def test_job_page_names_each_attempts_end_in_the_poison_tables_words(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    store.set_dlq_enabled("media", True)
    job = poison(store, clock)
    page = ui.get(f"/jobs/{job.id}").text

    ended = re.findall(r'<strong class="end">(.*?)</strong>', page)
    assert ended == [AttemptEnd.HEARTBEAT_STALE.text] * 3
    errors = re.findall(r'<div class="error user-data">(.*?)</div>', page)
    assert errors == [RescueCause.HEARTBEAT_STALE.error] * 3
    diagnosis = diagnose(job)
    assert diagnosis is not None
    assert f"Diagnosis: {diagnosis}" in text(page)  # the CLI's diagnosis, word for word
    assert "In the dead-letter queue as <strong>heartbeat_stale</strong>" in page
    assert re.search(r"failed at [-\d :]+Z \(attempts spent\)", page)
    assert 'id="dlq-retry" href="/dlq/retry?id=1"' in page
    assert 'id="cancel"' not in page


def test_job_page_tells_apart_every_way_an_attempt_ends(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    [job] = store.insert([NewJob(kind="k", queue="q", max_attempts=10)])

    def attempt(outcome: object) -> None:
        clock.advance(7200)
        [claimed] = store.claim("q", limit=1, deadline_duration_s=60)
        store.finish([Finish(claimed.lease, outcome)])  # type: ignore[arg-type]

    attempt(Fail("KeyError: 'to'", traceback="Traceback (most recent call last):\n  ..."))
    attempt(Fail("handler panicked: SystemExit: 3"))
    clock.advance(7200)
    store.claim("q", limit=1, deadline_duration_s=60)
    clock.advance(61)
    store.heartbeat([])  # nothing: the worker is alive, the deadline passes
    assert store.rescue(staleness_s=3600)[0].cause is RescueCause.DEADLINE_EXCEEDED
    clock.advance(7200)
    [claimed] = store.claim("q", limit=1)
    registered = store.register_callback(claimed.lease, timeout_s=30)
    assert isinstance(registered, Applied)
    token = CallbackToken(registered.job.callback_id or "", claimed.lease, clock.now())
    store.finish([Finish(claimed.lease, WaitForCallback(token))])
    clock.advance(31)
    assert store.rescue(staleness_s=3600)[0].cause is RescueCause.CALLBACK_TIMEOUT
    clock.advance(7200)
    [claimed] = store.claim("q", limit=1)
    store.release([claimed.lease])
    [claimed] = store.claim("q", limit=1)
    store.heartbeat([Heartbeat(claimed.lease, progress={"percent": 40, "message": "half"})])
    store.finish([Finish(claimed.lease, Cancel("not needed any more"))])

    page = ui.get(f"/jobs/{job.id}").text

    assert re.findall(r'<strong class="end">(.*?)</strong>', page) == [
        AttemptEnd.RAISED.text,
        AttemptEnd.PANICKED.text,
        AttemptEnd.DEADLINE_EXCEEDED.text,
        AttemptEnd.CALLBACK_TIMEOUT.text,
        AttemptEnd.WORKER_SHUTDOWN.text,
        AttemptEnd.CANCELLED.text,
    ]
    assert "Traceback (most recent call last)" in page  # behind "full error and traceback"
    assert re.search(r"cancelled at [-\d :]+Z by its handler", page)
    assert 'id="retry" href="/jobs/1/retry"' in page


def test_job_page_shows_the_live_attempt_its_lease_progress_and_callback(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    [job] = store.insert([NewJob(kind="k", queue="q", args={"n": 1}, metadata={"who": "me"})])
    [claimed] = store.claim("q", limit=1, deadline_duration_s=300)
    store.heartbeat([Heartbeat(claimed.lease, progress={"percent": 40, "message": "half way"})])
    registered = store.register_callback(claimed.lease, timeout_s=600)
    assert isinstance(registered, Applied)
    clock.advance(5)

    page = ui.get(f"/jobs/{job.id}").text

    said = text(page)
    assert "run_lease 1@1 held by attempt 1" in said
    assert '<progress max="100" value="40">' in page
    assert "40% half way" in said
    assert registered.job.callback_id in page
    assert "times out in 10m" in said  # 595 s
    assert "attempt 1 started 5s ago running: last heartbeat 5s ago" in said
    assert "&#34;who&#34;: &#34;me&#34;" in page
    assert 'id="cancel" href="/jobs/1/cancel"' in page
    assert 'data-live-refresh="5.0"' in page  # a job still going refreshes itself


def test_a_finished_job_does_not_refresh_itself(ui: TestClient, store: ClaimStore) -> None:
    [job] = store.insert([NewJob(kind="k")])
    [claimed] = store.claim("default", limit=1)
    store.finish([Finish(claimed.lease, Complete())])
    page = ui.get(f"/jobs/{job.id}").text
    assert 'data-live-refresh="0"' in page
    assert "completed at" in text(page)


# -- the dead-letter queue ---------------------------------------------------------------------


def test_dlq_page_groups_by_queue_kind_and_reason_and_lists_entries(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    assert isinstance(store, SummarizesQueues)
    for queue in ("media", "email"):
        store.set_dlq_enabled(queue, True)
    poison(store, clock)
    poison(store, clock)
    failing(store, "send", "email", "ValueError: no such address")
    store.summarize_queues()

    page = ui.get("/dlq").text
    groups = re.search(r'<table class="groups" id="groups">(.*?)</table>', page, re.DOTALL)
    assert groups is not None
    text = " ".join(re.sub(r"<[^>]+>", " ", groups.group(1)).split())
    assert "email send terminal_error 1" in text
    assert "media transcode heartbeat_stale 2" in text
    assert re.findall(r'<tr id="entry-(\d+)"', page) == ["3", "2", "1"]  # newest first
    assert 'href="/dlq/retry?queue=media&amp;kind=transcode"' in page
    assert 'href="/dlq/purge?queue=media&amp;kind=transcode"' in page

    media = ui.get("/dlq?queue=media").text
    assert re.findall(r'<tr id="entry-(\d+)"', media) == ["2", "1"]
    assert "email" not in re.sub(r"<form.*?</form>", "", media, flags=re.DOTALL).split("Entries")[1]
    assert 'id="retry-matching" href="/dlq/retry?queue=media"' in media


def test_a_store_without_a_summary_is_counted_on_each_page(store: ClaimStore) -> None:
    from awa.ui import create_app
    from tests.ui.conftest import browser_client

    class Plain:  # the port's verbs only: no SummarizesQueues
        def __getattr__(self, name: str) -> object:
            if name in ("summarize_queues", "queue_summary"):
                raise AttributeError(name)
            return getattr(store, name)

    store.insert([NewJob(kind="k", queue="q"), NewJob(kind="k", queue="q")])
    plain = browser_client(create_app(Plain()))
    page = plain.get("/").text
    assert "Counted now" in page
    assert cells(page, "queue-q")[2] == "2"
    assert ui_groups_empty(plain.get("/dlq").text)


def ui_groups_empty(html: str) -> bool:
    return "No dead letters." in html


def test_times_are_shown_against_the_stores_clock(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    store.insert([NewJob(kind="k", run_at=clock.now() + timedelta(minutes=30))])
    page = ui.get("/jobs/1").text
    assert "run at in 30m" in text(page)
    assert JobState.SCHEDULED.value in page


def test_mounted_under_a_path_every_link_and_form_stays_under_it(store: ClaimStore) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from awa.ui import create_app
    from tests.ui.conftest import act, browser_client

    store.insert([NewJob(kind="k", queue="q")])
    host = Starlette(routes=[Mount("/ops/awa", app=create_app(store))])
    client = browser_client(host)
    page = client.get("/ops/awa/jobs")
    assert page.status_code == 200
    links = re.findall(r'(?:href|action|src)="(/[^"]*)"', page.text)
    assert links
    assert all(link.startswith("/ops/awa/") for link in links), links
    assert client.get("/ops/awa/static/awa.css").status_code == 200
    assert "Path=/ops/awa/" in page.headers["set-cookie"]
    done = act(client, "/ops/awa/queues/q/pause")
    assert done.status_code == 200
    assert 'href="/ops/awa/"' in done.text
    assert any(s.paused for s in store.queue_stats())
