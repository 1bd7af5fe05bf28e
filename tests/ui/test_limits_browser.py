"""The limits form in a real browser (Debian's Chromium, driven by Playwright): from the queues
page's *Limits* button, a limit set and one refused, as a person fills them in. On the memory
store, as ``test_limits`` (the key limits are the interface of branch ``keys``)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import NewJob
from awa.domain.flow_limits import RateLimit
from awa.ui import create_app
from tests.http.conftest import serving
from tests.ui.browser import launched_browser

pytestmark = pytest.mark.browser

WAIT_MS = 15_000  # a bound for each wait on the page, never a pause


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], errors


def test_a_person_sets_the_limits_of_a_queue_and_a_bad_one_is_refused(page: Any) -> None:
    from playwright.sync_api import expect

    store = MemoryStore(ManualClock(), rng=random.Random(5))
    store.insert([NewJob(kind="k", queue="media") for _ in range(3)])
    store.claim("media", limit=1)
    store.summarize_queues()

    with serving(create_app(store, live_refresh_s=0)) as url:
        page.goto(url + "/")
        row = page.locator("#queue-media")
        expect(row.locator("td.flow")).to_have_text("-")
        row.get_by_role("link", name="Limits").click()
        expect(page.locator("h1")).to_have_text("Flow limits of media")
        page.fill("#concurrency_limit", "1")
        page.fill("#key_rate_per_second", "0.5")
        page.fill("#key_rate_burst", "2")
        page.click("#confirm")
        expect(page.locator("#result")).to_have_text(
            "queue media: at most 1 live at once, no rate limit; per concurrency key 0.5/s, burst 2"
        )
        assert store.queue_stats()[0].concurrency_limit == 1
        assert store.queue_stats()[0].key_rate_limit == RateLimit(0.5, 2)

        page.get_by_role("link", name="the queues").click()
        flow = page.locator("#queue-media td.flow")
        expect(flow).to_contain_text("1/1, key 0.5/s, burst 2")
        expect(flow.locator(".held")).to_have_text("2 wait for a slot")

        page.locator("#queue-media").get_by_role("link", name="Limits").click()
        expect(page.locator("#now-concurrency_limit")).to_have_text("now 1 (1 live)")
        page.fill("#concurrency_limit", "0")
        page.click("#confirm")
        expect(page.locator("p.notice.bad")).to_have_text(
            "concurrency_limit must be an integer from 1 to 1000000 or None, got 0"
        )
        assert store.queue_stats()[0].concurrency_limit == 1
