"""The dashboard under test: ``store`` runs a test once per store (memory, SQLite, then
PostgreSQL, all on a ManualClock); ``dashboard(...)`` builds the app on it and a client that
talks to it from 127.0.0.1, as a browser on this machine would; ``act`` confirms an action the
way a person does, by posting the form of its confirmation page."""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import Fail, Job, NewJob
from awa.ports import ClaimStore, Finish

with warnings.catch_warnings():  # Starlette's notice that httpx will give way to httpx2
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from awa.ui import create_app

BASE_URL = "http://127.0.0.1:8000"
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')
_FORM = re.compile(r'<form method="post" action="([^"]+)" class="confirm')


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[ClaimStore]:
    if request.param == "memory":
        yield MemoryStore(clock, rng=random.Random(3))
        return
    if request.param == "sqlite":
        from awa.adapters.sqlite import SqliteStore

        path = request.getfixturevalue("tmp_path") / "jobs.db"
        with SqliteStore(str(path), clock=clock, rng=random.Random(3)) as made:
            yield made
        return
    from awa.adapters.postgres import PostgresStore

    pg = PostgresStore(request.getfixturevalue("pg_clean_url"), clock=clock, rng=random.Random(3))
    try:
        yield pg
    finally:
        pg.close()


def browser_client(app: Any, *, host: str = "127.0.0.1", **kwargs: Any) -> TestClient:
    """A client on this machine (127.0.0.1), asking for 127.0.0.1:8000, following no redirect."""
    return TestClient(
        app, base_url=BASE_URL, client=(host, 50000), follow_redirects=False, **kwargs
    )


@pytest.fixture
def dashboard(store: ClaimStore) -> Callable[..., TestClient]:
    def build(**options: Any) -> TestClient:
        return browser_client(create_app(store, **options))

    return build


@pytest.fixture
def ui(dashboard: Callable[..., TestClient]) -> TestClient:
    return dashboard()


def form_fields(html: str) -> dict[str, str]:
    return {name: value.replace("&amp;", "&") for name, value in _HIDDEN.findall(html)}


def csrf(client: TestClient) -> dict[str, str]:
    """The CSRF field of this client's browser, from a page that has a form."""
    page = client.get("/queues/default/pause")
    assert page.status_code == 200, page.text
    return {k: v for k, v in form_fields(page.text).items() if k == "csrf"}


def act(client: TestClient, confirm_url: str, **extra: str) -> Any:
    """Open an action's confirmation page and submit its form; the response to the POST."""
    page = client.get(confirm_url)
    assert page.status_code == 200, page.text
    [action] = _FORM.findall(page.text)
    return client.post(action.replace("&amp;", "&"), data={**form_fields(page.text), **extra})


def poison(
    store: ClaimStore, clock: ManualClock, *, attempts: int = 3, queue: str = "media"
) -> Job:
    """A job whose worker dies on every attempt: each claim is left to go stale and is rescued,
    as maintenance would, until the attempts are spent (dead-lettered on a DLQ queue)."""
    [job] = store.insert(
        [NewJob(kind="transcode", queue=queue, args={"video": "cat.mp4"}, max_attempts=attempts)]
    )
    for _ in range(attempts):
        clock.advance(3600)  # past any backoff
        [claimed] = store.claim(queue, limit=1)
        assert claimed.id == job.id
        clock.advance(120)  # no heartbeat for longer than the 90 s staleness
        assert [r.job.id for r in store.rescue(staleness_s=90)] == [job.id]
    return store.get_job(job.id)


def failing(store: ClaimStore, kind: str, queue: str, error: str, **fields: Any) -> Job:
    """A job that failed at once with ``error`` (terminal)."""
    [job] = store.insert([NewJob(kind=kind, queue=queue, **fields)])
    [claimed] = store.claim(queue, limit=1)
    store.finish([Finish(claimed.lease, Fail(error, terminal=True))])
    return store.get_job(job.id)
