"""A queue's flow limits on the dashboard: the queues page shows each queue's live attempts
against its concurrency limit, its rates and key limits (``awa queue stats``' words) and how
many available jobs of a full queue wait for a slot, from the counts it reads already; the
limits form sets and removes each of the four limits with ``configure_queue`` as
``awa queue config`` does. A bad value is a 400 of one line that changes nothing; a form
from elsewhere, or a read-only dashboard, changes nothing either. On every store.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import NewJob, ValidationError
from awa.domain.flow_limits import RateLimit
from awa.ports import ClaimStore, QueueStats
from awa.ui import create_app
from tests.ui.conftest import TestClient, act, browser_client, csrf
from tests.ui.test_actions import refusal, result
from tests.ui.test_pages import cells, text
from tests.ui.test_security import HOSTILE

LIMITS = "/queues/media/limits"
#: the flow column of a queues row: queue, 8 states, dead letters, oldest waiting, ended
FLOW = 12


def stats_of(store: ClaimStore, queue: str) -> QueueStats:
    [found] = [s for s in store.queue_stats() if s.queue == queue]
    return found


def limits(store: ClaimStore, queue: str = "media") -> tuple[object, ...]:
    s = stats_of(store, queue)
    return s.concurrency_limit, s.rate_limit, s.key_concurrency_limit, s.key_rate_limit


def live_and_waiting(store: ClaimStore, queue: str, *, live: int, waiting: int) -> None:
    store.insert([NewJob(kind="k", queue=queue) for _ in range(live + waiting)])
    assert len(store.claim(queue, limit=live)) == live


# -- the queues page ---------------------------------------------------------------------------


def test_the_queues_page_shows_the_limits_and_the_jobs_a_full_queue_holds_back(
    ui: TestClient, store: ClaimStore
) -> None:
    store.configure_queue("media", concurrency_limit=2, rate_limit=(5, 10), key_concurrency_limit=1)
    live_and_waiting(store, "media", live=2, waiting=3)
    store.configure_queue("email", concurrency_limit=5)
    live_and_waiting(store, "email", live=1, waiting=2)
    store.configure_queue("thumbs", key_rate_limit=(0.5, 2))
    live_and_waiting(store, "thumbs", live=1, waiting=4)
    live_and_waiting(store, "plain", live=1, waiting=1)
    store.configure_queue("over", concurrency_limit=3)
    live_and_waiting(store, "over", live=3, waiting=1)
    store.configure_queue("over", concurrency_limit=1)  # lowered below what is live
    store.summarize_queues()

    page = ui.get("/").text

    assert cells(page, "queue-media")[FLOW] == "2/2, 5/s, burst 10, key 1 3 wait for a slot"
    assert cells(page, "queue-email")[FLOW] == "1/5"  # below its limit: nothing waits for one
    assert cells(page, "queue-thumbs")[FLOW] == "key 0.5/s, burst 2"  # no queue-wide slots
    assert cells(page, "queue-plain")[FLOW] == "-"
    assert cells(page, "queue-over")[FLOW] == "3/1 1 wait for a slot"
    assert 'href="/queues/media/limits"' in page
    assert 'href="/queues/plain/limits"' in page


def test_the_flow_column_is_as_of_the_count_and_its_limits_as_of_now(
    ui: TestClient, store: ClaimStore
) -> None:
    live_and_waiting(store, "media", live=1, waiting=2)
    store.summarize_queues()
    store.configure_queue("media", concurrency_limit=1)  # after the count: shown at once
    assert cells(ui.get("/").text, "queue-media")[FLOW] == "1/1 2 wait for a slot"


def test_the_queues_page_reads_the_summary_only(store: ClaimStore) -> None:
    """The flow column costs no query: the page reads the one summary row, as before."""
    called: list[str] = []

    class Recording:
        def __getattr__(self, name: str) -> Any:
            found = getattr(store, name)
            if not callable(found):
                return found

            def call(*args: Any, **kwargs: Any) -> Any:
                called.append(name)
                return found(*args, **kwargs)

            return call

    store.configure_queue("media", concurrency_limit=1)
    live_and_waiting(store, "media", live=1, waiting=1)
    store.summarize_queues()
    client = browser_client(create_app(Recording()))
    called.clear()
    page = client.get("/")
    assert "1 wait for a slot" in page.text
    assert called == ["queue_summary"]


def test_queue_names_are_escaped_on_the_queues_page_and_the_form(store: ClaimStore) -> None:
    """A queue name is user data: a store row written by hand can hold anything."""
    store.configure_queue("media", concurrency_limit=1)
    live_and_waiting(store, "media", live=1, waiting=1)
    summary = store.summarize_queues()
    hostile = [attrs.evolve(s, queue=HOSTILE["html"]) for s in summary.queues]

    class Hostile:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def queue_summary(self) -> Any:
            return attrs.evolve(summary, queues=tuple(hostile))

    client = browser_client(create_app(Hostile()))
    page = client.get("/").text
    assert "<script>window.__xss" not in page
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in page
    assert "1 wait for a slot" in page

    assert "/limits" not in page  # no path can name it: no action is offered
    for name in ("<img src=x onerror=window.__xss=1>", HOSTILE["attribute"]):
        form = client.get(f"/queues/{name}/limits")
        assert form.status_code == 400  # no queue can be named so: refused, escaped
        assert "<img" not in form.text
        assert 'onmouseover="' not in form.text
        assert "invalid queue name" in refusal(form)


# -- the form ----------------------------------------------------------------------------------


def test_the_form_shows_the_limits_and_sets_each_one(ui: TestClient, store: ClaimStore) -> None:
    store.configure_queue("media", concurrency_limit=3)
    live_and_waiting(store, "media", live=1, waiting=0)
    store.summarize_queues()
    form = ui.get(LIMITS)
    assert form.status_code == 200
    assert "Set the flow limits of queue media?" in text(form.text)
    assert 'id="now-concurrency_limit">now 3 (1 live)<' in form.text
    assert 'id="now-key_rate_limit">now none<' in form.text
    assert limits(store) == (3, None, None, None)  # asking changes nothing

    done = act(
        ui,
        LIMITS,
        concurrency_limit="5",
        rate_per_second="2.5",
        rate_burst="10",
        key_concurrency_limit="2",
        key_rate_per_second="0.5",
        key_rate_burst="3",
    )

    assert done.status_code == 200, done.text
    assert result(done) == (
        "queue media: at most 5 live at once, 2.5/s, burst 10; per concurrency key at most 2"
        " live at once, 0.5/s, burst 3"
    )
    assert limits(store) == (5, RateLimit(2.5, 10), 2, RateLimit(0.5, 3))


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"concurrency_limit": "7"}, (7, RateLimit(1, 2), 3, RateLimit(4, 5))),
        ({"rate_per_second": "9", "rate_burst": "1"}, (6, RateLimit(9, 1), 3, RateLimit(4, 5))),
        ({"key_concurrency_limit": "8"}, (6, RateLimit(1, 2), 8, RateLimit(4, 5))),
        (
            {"key_rate_per_second": "0.25", "key_rate_burst": "1"},
            (6, RateLimit(1, 2), 3, RateLimit(0.25, 1)),
        ),
        ({"concurrency_limit": "none"}, (None, RateLimit(1, 2), 3, RateLimit(4, 5))),
        ({"rate_per_second": "None"}, (6, None, 3, RateLimit(4, 5))),
        ({"key_concurrency_limit": " none "}, (6, RateLimit(1, 2), None, RateLimit(4, 5))),
        ({"key_rate_per_second": "none", "key_rate_burst": ""}, (6, RateLimit(1, 2), 3, None)),
    ],
)
def test_a_blank_field_keeps_its_limit_and_none_removes_it(
    ui: TestClient, store: ClaimStore, fields: dict[str, str], expected: tuple[object, ...]
) -> None:
    store.configure_queue(
        "media",
        concurrency_limit=6,
        rate_limit=(1, 2),
        key_concurrency_limit=3,
        key_rate_limit=(4, 5),
    )
    blank = dict.fromkeys(
        (
            "concurrency_limit",
            "rate_per_second",
            "rate_burst",
            "key_concurrency_limit",
            "key_rate_per_second",
            "key_rate_burst",
        ),
        "",
    )
    done = act(ui, LIMITS, **{**blank, **fields})
    assert done.status_code == 200, done.text
    assert limits(store) == expected


def test_removing_every_limit_leaves_an_unlimited_queue(ui: TestClient, store: ClaimStore) -> None:
    store.configure_queue("media", concurrency_limit=1, rate_limit=(1, 1))
    store.configure_queue("media", key_concurrency_limit=1, key_rate_limit=(1, 1))
    done = act(
        ui,
        LIMITS,
        concurrency_limit="none",
        rate_per_second="none",
        key_concurrency_limit="none",
        key_rate_per_second="none",
    )
    assert result(done) == "queue media: no concurrency limit, no rate limit"
    assert limits(store) == (None, None, None, None)
    store.summarize_queues()
    assert cells(ui.get("/").text, "queue-media")[FLOW] == "-"


def test_a_queue_not_counted_yet_can_be_limited(ui: TestClient, store: ClaimStore) -> None:
    form = ui.get("/queues/fresh/limits")
    assert form.status_code == 200
    assert "have not counted this queue yet" in text(form.text)
    assert act(ui, "/queues/fresh/limits", concurrency_limit="4").status_code == 200
    assert limits(store, "fresh") == (4, None, None, None)


def store_refusal(**limit: Any) -> str:
    """The store's own line for a limit it refuses."""
    with pytest.raises(ValidationError) as refused:
        MemoryStore(ManualClock()).configure_queue("media", **limit)
    return str(refused.value)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"concurrency_limit": "0"}, store_refusal(concurrency_limit=0)),
        ({"concurrency_limit": "-2"}, store_refusal(concurrency_limit=-2)),
        ({"key_concurrency_limit": "0"}, store_refusal(key_concurrency_limit=0)),
        (
            {"rate_per_second": "nan", "rate_burst": "5"},
            store_refusal(rate_limit=(float("nan"), 5)),
        ),
        ({"rate_per_second": "-1", "rate_burst": "5"}, store_refusal(rate_limit=(-1.0, 5))),
        ({"rate_per_second": "2", "rate_burst": "0"}, store_refusal(rate_limit=(2.0, 0))),
        (
            {"key_rate_per_second": "inf", "key_rate_burst": "1"},
            store_refusal(key_rate_limit=(float("inf"), 1)),
        ),
        (
            {"key_rate_per_second": "1", "key_rate_burst": "-3"},
            store_refusal(key_rate_limit=(1.0, -3)),
        ),
        (
            {"concurrency_limit": "five"},
            "concurrency_limit must be a whole number, or none to remove it, got 'five'",
        ),
        (
            {"key_concurrency_limit": "1.5"},
            "key_concurrency_limit must be a whole number, or none to remove it, got '1.5'",
        ),
        (
            {"concurrency_limit": "\u0663"},  # an Arabic-Indic three, which int() would read
            "concurrency_limit must be a whole number, or none to remove it, got '\u0663'",
        ),
        (
            {"concurrency_limit": "9" * 5000},
            f"concurrency_limit must be a whole number, or none to remove it, got '{'9' * 39}…'",
        ),
        (
            {"rate_per_second": "fast", "rate_burst": "5"},
            "rate_limit per_second must be a number, got 'fast'",
        ),
        (
            {"key_rate_per_second": "1", "key_rate_burst": "lots"},
            "key_rate_limit burst must be a whole number, got 'lots'",
        ),
        (
            {"rate_per_second": "2"},
            "rate_limit needs its burst beside the rate: the most attempts that start at once",
        ),
        (
            {"key_rate_burst": "2"},
            "key_rate_limit needs its rate per second beside the burst (none removes the limit)",
        ),
        (
            {"rate_per_second": "none", "rate_burst": "2"},
            "rate_limit: leave the burst blank to remove the limit, got burst '2'",
        ),
        (
            {"concurrency_limit": " ", "rate_per_second": ""},
            "nothing to set: fill in a limit (a blank field keeps its limit, none removes it)",
        ),
    ],
)
def test_a_bad_value_is_a_400_of_one_line_that_changes_nothing(
    ui: TestClient, store: ClaimStore, fields: dict[str, str], expected: str
) -> None:
    store.configure_queue("media", concurrency_limit=6, key_rate_limit=(4, 5))
    before = store.queue_stats()
    # a good value beside the bad one is not stored either
    good = {} if "concurrency_limit" in fields else {"concurrency_limit": "9"}
    answer = act(ui, LIMITS, **good, **fields)
    assert answer.status_code == 400
    line = refusal(answer)
    assert "\n" not in line
    assert line == expected
    assert store.queue_stats() == before


# -- who may change them -------------------------------------------------------------------------


def test_a_form_without_its_csrf_token_or_from_another_site_changes_nothing(
    ui: TestClient, store: ClaimStore
) -> None:
    store.configure_queue("media", concurrency_limit=6)
    for data in ({"concurrency_limit": "1"}, {"concurrency_limit": "1", "csrf": "0" * 64}):
        answer = ui.post(LIMITS, data=data)
        assert answer.status_code == 403
        assert "the form has expired" in refusal(answer)
    token = csrf(ui)
    cross = ui.post(
        LIMITS,
        data={**token, "concurrency_limit": "1"},
        headers={"origin": "https://evil.example"},
    )
    assert cross.status_code == 403
    assert "came from another site" in refusal(cross)
    assert limits(store) == (6, None, None, None)
    assert ui.post(LIMITS, data={**token, "concurrency_limit": "1"}).status_code == 200
    assert limits(store) == (1, None, None, None)


def test_a_read_only_dashboard_shows_the_limits_and_offers_no_form(store: ClaimStore) -> None:
    store.configure_queue("media", concurrency_limit=1)
    live_and_waiting(store, "media", live=1, waiting=2)
    store.summarize_queues()
    client = browser_client(create_app(store, read_only=True))
    page = client.get("/").text
    assert cells(page, "queue-media")[FLOW] == "1/1 2 wait for a slot"
    assert "/limits" not in page
    assert client.get(LIMITS).status_code == 403
    posted = client.post(LIMITS, data={"concurrency_limit": "5"})
    assert posted.status_code == 403
    assert refusal(posted) == "this dashboard is read-only: nothing was changed"
    assert limits(store) == (1, None, None, None)
