"""Transactional enqueue on every kind of connection an application holds, against the real
database, with a worker running: commit makes the job visible and the worker picks it up;
rollback leaves no row and sends no wake-up.

The worker polls only every 60 s and has finished its first (empty) claim before the insert,
so a job it picks up within the test's bound came through the commit's wake-up, not a poll.
Each ``insert_*`` function below is written the way an application using that driver would.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

import awa
from awa.adapters.postgres import WAKEUP_CHANNEL
from awa.runtime.observe import Observer

QUEUE = "orders"
PICKUP_BOUND_S = 10.0  # a failure detector, not a timing claim: the poll is 60 s away


@awa.job_kind(queue=QUEUE)  # producers that never import the handler insert on its queue
@dataclass
class ShipOrder:
    order_id: int


# -- the applications' side, one function per driver ----------------------------------------------


def insert_psycopg(client: awa.Client, url: str, commit: bool) -> awa.JobRecord:
    with psycopg.connect(url) as conn:
        conn.execute("SELECT 1")  # the application's own work in the same transaction
        job = client.insert(ShipOrder(1), conn=conn)
        conn.commit() if commit else conn.rollback()
    return job


def insert_sqlalchemy_connection(client: awa.Client, url: str, commit: bool) -> awa.JobRecord:
    import sqlalchemy

    engine = sqlalchemy.create_engine(_sqlalchemy_url(url, "psycopg"))
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT 1"))
            job = client.insert(ShipOrder(1), conn=conn)
            conn.commit() if commit else conn.rollback()
    finally:
        engine.dispose()
    return job


def insert_sqlalchemy_session(client: awa.Client, url: str, commit: bool) -> awa.JobRecord:
    import sqlalchemy
    from sqlalchemy.orm import Session

    engine = sqlalchemy.create_engine(_sqlalchemy_url(url, "psycopg"))
    try:
        with Session(engine) as session:
            job = client.insert(ShipOrder(1), conn=session)
            session.commit() if commit else session.rollback()
    finally:
        engine.dispose()
    return job


def insert_django(client: awa.Client, url: str, commit: bool) -> awa.JobRecord:
    _configure_django(url)
    from django.db import connection, transaction

    with transaction.atomic():
        job = client.insert(ShipOrder(1), conn=connection)
        if not commit:
            transaction.set_rollback(True)
    connection.close()
    return job


async def insert_psycopg_async(client: awa.AsyncClient, url: str, commit: bool) -> awa.JobRecord:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        job = await client.insert(ShipOrder(1), conn=conn)
        await (conn.commit() if commit else conn.rollback())
    return job


async def insert_sqlalchemy_async_connection(
    client: awa.AsyncClient, url: str, commit: bool
) -> awa.JobRecord:
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(_sqlalchemy_url(url, "psycopg"))
    try:
        async with engine.connect() as conn:
            job = await client.insert(ShipOrder(1), conn=conn)
            await (conn.commit() if commit else conn.rollback())
    finally:
        await engine.dispose()
    return job


async def insert_sqlalchemy_async_session(
    client: awa.AsyncClient, url: str, commit: bool
) -> awa.JobRecord:
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    engine = create_async_engine(_sqlalchemy_url(url, "asyncpg"))
    try:
        async with AsyncSession(engine) as session:
            job = await client.insert(ShipOrder(1), conn=session)
            await (session.commit() if commit else session.rollback())
    finally:
        await engine.dispose()
    return job


async def insert_asyncpg(client: awa.AsyncClient, url: str, commit: bool) -> awa.JobRecord:
    import asyncpg

    conn = await asyncpg.connect(_as_url(url))
    try:
        transaction = conn.transaction()
        await transaction.start()
        job = await client.insert(ShipOrder(1), conn=conn)
        await (transaction.commit() if commit else transaction.rollback())
    finally:
        await conn.close()
    return job


SYNC_DRIVERS: dict[str, Callable[[awa.Client, str, bool], awa.JobRecord]] = {
    "psycopg": insert_psycopg,
    "sqlalchemy-connection": insert_sqlalchemy_connection,
    "sqlalchemy-session": insert_sqlalchemy_session,
    "django": insert_django,
}
ASYNC_DRIVERS: dict[str, Callable[[awa.AsyncClient, str, bool], Awaitable[awa.JobRecord]]] = {
    "psycopg-async": insert_psycopg_async,
    "sqlalchemy-async-connection": insert_sqlalchemy_async_connection,
    "sqlalchemy-async-session": insert_sqlalchemy_async_session,
    "asyncpg": insert_asyncpg,
}
DRIVERS = [*SYNC_DRIVERS, *ASYNC_DRIVERS]


def _sqlalchemy_url(url: str, driver: str) -> str:
    return _as_url(url, f"postgresql+{driver}")


def _as_url(url: str, scheme: str = "postgresql") -> str:
    """The test server's conninfo as a URL, which SQLAlchemy and asyncpg want."""
    params = conninfo_to_dict(url)
    return f"{scheme}://{params['user']}@{params['host']}:{params['port']}/{params['dbname']}"


def _configure_django(url: str) -> None:
    """A minimal settings module for this test process: Django's settings are process-wide
    and configured once, so every Django test here shares the session database."""
    from django.conf import settings

    if settings.configured:
        return
    params = conninfo_to_dict(url)
    settings.configure(
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": params["dbname"],
                "USER": params["user"],
                "HOST": params["host"],
                "PORT": params["port"],
            }
        },
        USE_TZ=True,
    )
    import django

    django.setup()


def _insert(driver: str, client: awa.Client, url: str, commit: bool) -> awa.JobRecord:
    if driver in SYNC_DRIVERS:
        return SYNC_DRIVERS[driver](client, url, commit)

    async def produce() -> awa.JobRecord:
        async with awa.AsyncClient(url) as producer:
            return await ASYNC_DRIVERS[driver](producer, url, commit)

    return asyncio.run(produce())


# -- the worker's side ----------------------------------------------------------------------------


class FirstClaim(Observer):
    """Set once the worker has claimed (found nothing) on the queue after starting."""

    def __init__(self) -> None:
        self.done = threading.Event()

    def claimed(self, queue: str, jobs: Sequence[awa.JobRecord], now: datetime) -> None:
        if queue == QUEUE:
            self.done.set()


@pytest.fixture
def worker(pg_clean_url: str) -> Iterator[tuple[awa.Client, dict[int, threading.Event]]]:
    """A running worker on ``orders`` that only a wake-up can make claim again soon."""
    shipped: dict[int, threading.Event] = {}
    client = awa.Client(pg_clean_url)

    @client.task(ShipOrder)
    def ship(job: awa.SyncJob[ShipOrder]) -> None:
        shipped.setdefault(job.id, threading.Event()).set()

    first_claim = FirstClaim()
    client.start([(QUEUE, 2)], poll_interval=60.0, observers=[first_claim])
    assert first_claim.done.wait(PICKUP_BOUND_S), "the worker never made its first claim"
    try:
        yield client, shipped
    finally:
        client.close()


def _listening(url: str) -> psycopg.Connection[Any]:
    listener = psycopg.connect(url, autocommit=True)
    listener.execute(f"LISTEN {WAKEUP_CHANNEL}")
    return listener


def _wakeups_until_marker(listener: psycopg.Connection[Any], url: str) -> list[str]:
    """Every wake-up delivered before a marker sent now (notifications keep commit order)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, 'marker')", [WAKEUP_CHANNEL])
    payloads = []
    for notify in listener.notifies(timeout=PICKUP_BOUND_S):
        if notify.payload == "marker":
            return payloads
        payloads.append(notify.payload)
    raise AssertionError("the marker wake-up never arrived")


@pytest.mark.parametrize("driver", DRIVERS)
def test_commit_makes_the_job_visible_and_a_running_worker_picks_it_up(
    driver: str, worker: tuple[awa.Client, dict[int, threading.Event]], pg_clean_url: str
) -> None:
    client, shipped = worker
    job = _insert(driver, client, pg_clean_url, commit=True)
    assert (job.kind, job.queue, job.args) == ("ship_order", QUEUE, {"order_id": 1})
    assert job.state is awa.JobState.AVAILABLE
    event = shipped.setdefault(job.id, threading.Event())
    assert event.wait(PICKUP_BOUND_S), f"the worker did not pick up job {job.id}"


@pytest.mark.parametrize("driver", DRIVERS)
def test_rollback_leaves_no_row_and_sends_no_wakeup(
    driver: str, worker: tuple[awa.Client, dict[int, threading.Event]], pg_clean_url: str
) -> None:
    client, shipped = worker
    listener = _listening(pg_clean_url)
    try:
        job = _insert(driver, client, pg_clean_url, commit=False)
        assert _wakeups_until_marker(listener, pg_clean_url) == []
    finally:
        listener.close()
    with pytest.raises(awa.JobNotFound):
        client.get_job(job.id)
    assert client.list_jobs() == []
    assert shipped == {}


# -- what the driver's own set-up cannot spoil, and what is refused ------------------------------


def test_a_django_raw_connection_whose_jsonb_loader_returns_text_still_gives_a_job(
    pg_clean_url: str,
) -> None:
    """Django registers its own loaders on its psycopg connection (jsonb comes back as
    text); the job is read by awa, not by those loaders."""
    from psycopg.types.string import TextLoader

    with awa.Client(pg_clean_url) as client, psycopg.connect(pg_clean_url) as conn:
        conn.adapters.register_loader("jsonb", TextLoader)
        job = client.insert(ShipOrder(7), conn=conn, metadata={"source": "django"})
        conn.commit()
        assert job.args == {"order_id": 7}
        assert job.metadata == {"source": "django"}
        assert client.get_job(job.id) == job


def test_an_asyncpg_connection_with_its_own_json_codec_still_gives_a_job(
    pg_clean_url: str,
) -> None:
    import json

    import asyncpg

    async def story() -> awa.JobRecord:
        conn = await asyncpg.connect(_as_url(pg_clean_url))
        await conn.set_type_codec(
            "jsonb", encoder=json.dumps, decoder=lambda _: "decoded by the app", schema="pg_catalog"
        )
        try:
            async with awa.AsyncClient(pg_clean_url) as client, conn.transaction():
                return await client.insert(ShipOrder(8), conn=conn, tags=["a"])
        finally:
            await conn.close()

    job = asyncio.run(story())
    assert (job.args, job.tags) == ({"order_id": 8}, ("a",))


def test_a_refused_batch_runs_no_sql_and_leaves_the_callers_transaction_usable(
    pg_clean_url: str,
) -> None:
    with awa.Client(pg_clean_url) as client, psycopg.connect(pg_clean_url) as conn:
        good = client.insert(ShipOrder(1), conn=conn)
        with pytest.raises(awa.ValidationError, match="priority"):
            client.insert_many(
                [ShipOrder(2), awa.InsertSpec(args=ShipOrder(3), priority=9)], conn=conn
            )
        conn.execute("SELECT 1")  # not aborted: nothing reached the server
        conn.commit()
        assert [j.id for j in client.list_jobs()] == [good.id]


@pytest.mark.parametrize(
    ("conn", "named"),
    [
        ("not a connection", "got str"),
        (42, "got int"),
        (object(), "got object"),
        (threading.Lock(), "got _thread.lock"),
    ],
)
def test_anything_but_a_connection_is_refused_with_its_type_named(
    conn: object, named: str, pg_clean_url: str
) -> None:
    with awa.Client(pg_clean_url) as client:
        with pytest.raises(awa.ValidationError, match=named) as refused:
            client.insert(ShipOrder(1), conn=conn)
        assert "\n" not in str(refused.value)
        assert client.list_jobs() == []


def test_a_sqlalchemy_connection_to_another_database_is_refused() -> None:
    import sqlalchemy

    engine = sqlalchemy.create_engine("sqlite://")
    with (
        engine.connect() as conn,
        awa.Client(store=awa.MemoryStore()) as memory,
        pytest.raises(awa.ValidationError, match="MemoryStore cannot insert"),
    ):
        memory.insert(ShipOrder(1), conn=conn)
    from awa.adapters.postgres.inserts.caller_connections import caller_connection

    with engine.connect() as conn, pytest.raises(awa.ValidationError, match="to sqlite, not"):
        caller_connection(conn)


def test_the_sync_client_refuses_an_asyncio_connection_and_says_what_to_use(
    pg_clean_url: str,
) -> None:
    async def story() -> None:
        async with await psycopg.AsyncConnection.connect(pg_clean_url) as conn:
            with (
                awa.Client(pg_clean_url) as client,
                pytest.raises(awa.ValidationError, match=r"use awa\.AsyncClient"),
            ):
                client.insert(ShipOrder(1), conn=conn)

    asyncio.run(story())


def test_a_pydantic_model_and_a_declared_kind_go_through_a_callers_connection(
    pg_clean_url: str,
) -> None:
    import pydantic

    @awa.job_kind(queue="billing", priority=1, max_attempts=5)
    class Invoice(pydantic.BaseModel):
        customer: str
        cents: int

    with awa.Client(pg_clean_url) as client, psycopg.connect(pg_clean_url) as conn:
        job = client.insert(Invoice(customer="ada", cents=1200), conn=conn)
        conn.commit()
    assert (job.kind, job.queue, job.priority, job.max_attempts) == ("invoice", "billing", 1, 5)
    assert job.args == {"customer": "ada", "cents": 1200}
