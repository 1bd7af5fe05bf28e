"""A job whose stored row holds a value awa cannot read shows on the dashboard with what is
stored, on every store: the listing, the job's page (with a notice naming each column) and
the dead-letter listing; nothing fails to render."""

from __future__ import annotations

import html
from datetime import timedelta

from awa.adapters.memory import ManualClock
from awa.domain import Fail, NewJob
from awa.ports import ClaimStore, Finish
from tests.planting import plant_in
from tests.ui.conftest import TestClient
from tests.ui.test_pages import cells, text


def test_a_run_at_that_cannot_be_read_is_shown_as_stored(
    ui: TestClient, store: ClaimStore, clock: ManualClock
) -> None:
    [later] = store.insert([NewJob(kind="report", run_at=clock.now() + timedelta(hours=1))])
    plant_in(store, later.id, "run_at", too_late=True)
    stored = store.get_job(later.id).unreadable[0].raw
    listing = ui.get("/jobs")
    assert listing.status_code == 200
    assert stored in html.unescape(cells(listing.text, f"job-{later.id}")[6])
    page = ui.get(f"/jobs/{later.id}")
    assert page.status_code == 200
    said = text(page.text)
    assert f"Stored values awa cannot read: run_at holds {stored}" in said
    assert "9999" not in cells(listing.text, f"job-{later.id}")[6]


def test_a_dead_letter_that_cannot_be_read_is_listed_as_stored(
    ui: TestClient, store: ClaimStore
) -> None:
    store.set_dlq_enabled("dead", True)
    [job] = store.insert([NewJob(kind="report", queue="dead", max_attempts=1)])
    [claimed] = store.claim("dead", limit=1)
    store.finish([Finish(claimed.lease, Fail("boom"))])
    plant_in(store, job.id, "finalized_at", too_late=True)
    listing = ui.get("/dlq")
    assert listing.status_code == 200
    page = ui.get(f"/jobs/{job.id}")
    assert page.status_code == 200
    assert "finalized_at holds" in text(page.text)
