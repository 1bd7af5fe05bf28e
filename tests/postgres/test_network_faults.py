"""Network failures between awa and PostgreSQL: every connection has keepalives and a connect
timeout, the server cancels a slow statement, a silent connection is abandoned by the
watchdog and replaced, the listener and the loop's insert connection come back, an unreachable
server is a one-line error within seconds, and a real worker whose network is black-holed
resumes once it heals.

The silence comes from ``tests/tcp_proxy.py``: it keeps every connection open and swallows
the bytes, so the kernel acknowledges them and keepalives see nothing wrong; only the
client-side bounds can notice.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from awa.adapters.postgres import PostgresStore
from awa.adapters.postgres.connections import (
    KEEPALIVES_COUNT,
    KEEPALIVES_IDLE_S,
    KEEPALIVES_INTERVAL_S,
    Bounds,
    redact,
)
from awa.adapters.postgres.listen import Subscriptions, pool_connector
from awa.adapters.postgres.migrations import MIGRATION_LOCK_KEY
from awa.domain import DatabaseError, JobState, NewJob, ValidationError
from awa.ports import Event, JobsAvailable
from tests.tcp_proxy import TcpProxy, closed_port

WORKER = Path(__file__).with_name("worker_process.py")
ROOT = Path(__file__).resolve().parents[2]
#: bounds short enough for tests: the statement timeout must stay under the call's bound
QUICK = {"connect_timeout_s": 2.0, "statement_timeout_s": 0.5, "call_timeout_s": 1.0}
#: how late a bound may fire, or a reconnect land, on a loaded CI machine
SLACK_S = 3.0
T = TypeVar("T")


def until(condition: Callable[[], T], what: str, timeout_s: float) -> T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout_s``."""
    give_up = time.monotonic() + timeout_s
    pause = threading.Event()
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > give_up:
            raise AssertionError(f"{what}: not within {timeout_s}s")
        pause.wait(0.05)  # the poll period, not a synchronisation


async def until_async(condition: Callable[[], object], what: str, timeout_s: float) -> None:
    """``until`` on an event loop, which keeps running while it waits."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + timeout_s
    while not condition():
        assert loop.time() < give_up, f"{what}: not within {timeout_s}s"
        await asyncio.sleep(0.01)  # the poll period, not a synchronisation


def timed(call: Callable[[], object]) -> tuple[BaseException | None, float]:
    started = time.monotonic()
    try:
        call()
    except Exception as exc:
        return exc, time.monotonic() - started
    return None, time.monotonic() - started


@pytest.fixture
def proxy(pg_clean_url: str) -> Iterator[TcpProxy]:
    params = conninfo_to_dict(pg_clean_url)
    host = params.get("host") or "localhost"
    if host.startswith("/"):
        pytest.skip("the test server is on a Unix socket; the proxy needs TCP")
    with TcpProxy(host, int(params.get("port") or 5432)) as started:
        yield started


@pytest.fixture
def proxied_url(proxy: TcpProxy, pg_clean_url: str) -> str:
    """The test database through the proxy."""
    return proxy.url(pg_clean_url)


@pytest.fixture
def store(pg_clean_url: str) -> Iterator[PostgresStore]:
    """Direct to the database, for setting up and checking."""
    with PostgresStore(pg_clean_url, pool_size=2) as direct:
        yield direct


# -- the options on every connection -------------------------------------------------------


def _sockets_to(port: int) -> list[socket.socket]:
    """This process's TCP sockets connected to ``port`` (duplicates: close them)."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue
        try:
            if sock.family == socket.AF_INET and sock.getpeername()[1] == port:
                found.append(sock)
                continue
        except OSError:
            pass
        sock.close()
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and TCP_* options")
def test_every_connection_the_store_opens_has_keepalives_and_timeouts(
    proxy: TcpProxy, proxied_url: str
) -> None:
    async def check_all_three(store: PostgresStore) -> None:
        await store.insert_async([NewJob(kind="k")])  # through the pool; then the loop's own
        await until_async(lambda: store._loop_inserts.connected, "the loop's connection", 10)
        sockets = _sockets_to(proxy.port)
        try:
            # the pool's, the listener's and the loop's (the first-use probe is closed)
            assert len(sockets) >= 3
            for sock in sockets:
                options = (
                    sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                    sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                    sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                    sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
                    sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
                )
                expected = (1, KEEPALIVES_IDLE_S, KEEPALIVES_INTERVAL_S, KEEPALIVES_COUNT, 12_000)
                assert options == expected
        finally:
            for sock in sockets:
                sock.close()
        await store.close_async()

    with PostgresStore(proxied_url, call_timeout_s=12.0) as store:
        store.subscribe(lambda _: None)  # the listener's connection
        asyncio.run(check_all_three(store))
        with store.pool.connection() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone() == ("10s",)
            assert conn.execute("SHOW TimeZone").fetchone() == ("UTC",)
            # the server's side: it ends an abandoned transaction, and notices a dead client
            assert conn.execute("SHOW idle_in_transaction_session_timeout").fetchone() == ("15s",)
            assert conn.execute("SHOW tcp_keepalives_idle").fetchone() == (str(KEEPALIVES_IDLE_S),)
            interval = conn.execute("SHOW tcp_keepalives_interval").fetchone()
            assert interval == (str(KEEPALIVES_INTERVAL_S),)
            assert conn.execute("SHOW tcp_keepalives_count").fetchone() == (str(KEEPALIVES_COUNT),)


def test_the_url_overrides_keepalive_settings_and_keeps_its_options(pg_clean_url: str) -> None:
    url = make_conninfo(pg_clean_url, keepalives_idle=60, options="-c application_name=mine")
    with PostgresStore(url, statement_timeout_s=None) as store:
        kwargs = store.pool.kwargs
        assert isinstance(kwargs, dict)
        assert "keepalives_idle" not in kwargs  # the URL's 60 stands
        assert kwargs["keepalives_interval"] == str(KEEPALIVES_INTERVAL_S)
        with store.pool.connection() as conn:
            assert conn.execute("SHOW application_name").fetchone() == ("mine",)
            assert conn.execute("SHOW TimeZone").fetchone() == ("UTC",)
            # no statement_timeout_s: the server's own setting
            assert conn.execute("SHOW statement_timeout").fetchone() == ("0",)


def test_the_url_may_change_the_servers_keepalives_and_none_keeps_its_idle_timeout(
    pg_clean_url: str,
) -> None:
    url = make_conninfo(pg_clean_url, options="-c tcp_keepalives_idle=60")
    with (
        PostgresStore(url, idle_in_transaction_timeout_s=None) as store,
        store.pool.connection() as conn,
    ):
        idle = conn.execute("SHOW tcp_keepalives_idle").fetchone()
        assert idle in {("60",), ("0",)}  # 0 on a Unix socket, where the server ignores it
        timeout = conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()
        assert timeout == ("0",)


@pytest.mark.parametrize(
    ("bounds", "refusal"),
    [
        ({"call_timeout_s": 5, "statement_timeout_s": 5}, "longer than statement_timeout_s"),
        ({"call_timeout_s": 0}, "call_timeout_s must be > 0"),
        ({"connect_timeout_s": -1}, "connect_timeout_s must be > 0"),
        ({"statement_timeout_s": float("nan")}, "statement_timeout_s must be > 0"),
        ({"call_timeout_s": "15"}, "call_timeout_s must be a number"),
        ({"idle_in_transaction_timeout_s": 0}, "idle_in_transaction_timeout_s must be > 0"),
        ({"held_row_wait_s": -1}, "held_row_wait_s must be > 0"),
    ],
)
def test_bounds_that_make_no_sense_are_refused(bounds: dict[str, Any], refusal: str) -> None:
    with pytest.raises(ValidationError, match=refusal):
        PostgresStore("postgresql://nobody@127.0.0.1:1/nowhere", **bounds)


def test_bounds_default_to_a_few_seconds() -> None:
    assert Bounds.checked() == Bounds(5.0, 10.0, 15.0, 15.0)
    assert Bounds.checked(statement_timeout_s=None).statement_timeout_s is None
    assert Bounds.checked(idle_in_transaction_timeout_s=None).idle_in_transaction_timeout_s is None


def test_the_server_ends_a_transaction_whose_client_went_silent(
    proxy: TcpProxy, proxied_url: str, store: PostgresStore
) -> None:
    """The issue's wedge began here: a worker's connection was black-holed mid-transaction
    and the server, which learns of a vanished client only from its own socket (two hours by
    the kernel's default), kept the transaction and its row lock. A session of the store's own
    pool (its connection options, through the proxy) holds a job's row, its network goes
    silent, and the server ends the session within its idle-in-transaction timeout."""
    [job] = store.insert([NewJob(kind="k")])
    with PostgresStore(proxied_url, idle_in_transaction_timeout_s=0.5, **QUICK) as abandoning:
        options = dict(abandoning.pool.kwargs or {})
    client = psycopg.connect(proxied_url, **options)  # autocommit, as the pool's
    try:
        client.execute("BEGIN")
        client.execute("SELECT 1 FROM awa.jobs WHERE id = %s FOR UPDATE", [job.id])
        pid = client.info.backend_pid
        proxy.black_hole()  # the client can neither commit nor roll back now
        with psycopg.connect(store.pool.conninfo, autocommit=True) as other:

            def row_free() -> bool:
                try:
                    other.execute(
                        "SELECT 1 FROM awa.jobs WHERE id = %s FOR UPDATE NOWAIT", [job.id]
                    )
                except psycopg.errors.LockNotAvailable:
                    return False
                return True

            until(row_free, "the abandoned transaction's row lock released", 0.5 + SLACK_S)

            def session_gone() -> bool:
                found = other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid])
                return found.fetchone() is None

            until(session_gone, "the abandoned session ended", SLACK_S)
    finally:
        client.close()


# -- the server's statement timeout and the client's watchdog ------------------------------


def test_a_statement_stuck_behind_a_lock_is_cancelled_by_the_server(pg_clean_url: str) -> None:
    bounds = {"statement_timeout_s": 0.5, "call_timeout_s": 5.0}
    with PostgresStore(pg_clean_url, **bounds) as store, psycopg.connect(pg_clean_url) as locker:
        store.list_jobs()
        locker.execute("LOCK TABLE awa.jobs IN ACCESS EXCLUSIVE MODE")  # held until rollback
        error, took_s = timed(store.list_jobs)
        locker.rollback()
        assert isinstance(error, DatabaseError)
        assert isinstance(error.__cause__, psycopg.errors.QueryCanceled)
        assert "statement timeout" in str(error)
        assert 0.5 <= took_s < 5.0  # the server's bound, before the client's
        assert store.list_jobs() == []  # the same connection goes on working


def test_a_call_on_a_silent_connection_is_abandoned_at_its_bound(
    proxy: TcpProxy, proxied_url: str
) -> None:
    with PostgresStore(proxied_url, **QUICK) as store:
        store.list_jobs()
        proxy.black_hole()
        error, took_s = timed(store.list_jobs)
        assert isinstance(error, DatabaseError)
        assert str(error) == (
            "listing jobs failed: no answer from the database within 1s (call_timeout_s);"
            " the connection was abandoned"
        )
        assert isinstance(error.__cause__, psycopg.OperationalError)
        assert 1.0 <= took_s < 1.0 + SLACK_S
        proxy.heal()
        # the pool replaces what the watchdog abandoned, and drains what went silent with it
        until(lambda: _works(store.list_jobs), "the store works again", 2 * SLACK_S)


def _works(call: Callable[[], object]) -> bool:
    try:
        call()
    except DatabaseError:
        return False
    return True


def test_migrations_are_not_bound_by_the_statement_timeout(empty_database: str) -> None:
    """Waiting 0.8 s for another migrator's lock, with a statement timeout of 0.2 s: the
    server does not cancel the migration. (A timeout of a few milliseconds would test this
    less well: it can cancel the ``BEGIN`` before the migration lifts it.)"""
    took_s = _migrate_while_locked(empty_database, 0.8, statement_timeout_s=0.2)
    assert took_s >= 0.7


def test_a_migration_may_outlive_the_call_timeout(empty_database: str) -> None:
    """Waiting 1.5 s for another migrator's lock, with a call bound of 1 s: the migration is
    not abandoned as a silent call would be."""
    took_s = _migrate_while_locked(empty_database, 1.5, statement_timeout_s=0.5, call_timeout_s=1.0)
    assert took_s >= 1.4


def _migrate_while_locked(
    database: str, hold_s: float, *, statement_timeout_s: float, call_timeout_s: float = 15.0
) -> float:
    """Seconds ``migrate`` took while another connection held the migration lock ``hold_s``."""
    with psycopg.connect(database) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        release = threading.Timer(hold_s, other.commit)
        release.start()
        try:
            with PostgresStore(
                database, statement_timeout_s=statement_timeout_s, call_timeout_s=call_timeout_s
            ) as store:
                started = time.monotonic()
                assert store.migrate()
                return time.monotonic() - started
        finally:
            release.join()


# -- the listener and the loop's connection ------------------------------------------------


class _Heard:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.changed = threading.Condition()

    def __call__(self, event: Event) -> None:
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def wait_for(self, event: Event, timeout_s: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: event in self.events, timeout=timeout_s)


def test_the_listener_notices_a_silent_connection_and_listens_again(
    proxy: TcpProxy, proxied_url: str, store: PostgresStore
) -> None:
    bounds = Bounds.checked(**QUICK)
    liveness_s = 0.5
    subscriptions = Subscriptions(
        pool_connector(proxied_url, {}, bounds), bounds, liveness_s=liveness_s
    )
    heard = _Heard()
    subscriptions.subscribe(heard)
    try:
        store.insert([NewJob(kind="k", queue="before")])
        assert heard.wait_for(JobsAvailable("before"), 5)
        proxy.black_hole()
        proxy.heal()  # new connections get through; the listener's stays silent
        healed_at = time.monotonic()
        # hints sent before the listener is back are lost: send until one is heard
        until(
            lambda: (
                store.insert([NewJob(kind="k", queue="after")])
                and heard.wait_for(JobsAvailable("after"), 0.2)
            ),
            "a hint heard after the heal",
            liveness_s + bounds.call_timeout_s + 2 * SLACK_S,
        )
        took_s = time.monotonic() - healed_at
        assert took_s < liveness_s + bounds.call_timeout_s + SLACK_S
        assert subscriptions.listening
    finally:
        subscriptions.close()


def test_an_insert_from_the_loop_on_a_silent_connection_is_abandoned(
    proxy: TcpProxy, proxied_url: str
) -> None:
    async def story(store: PostgresStore) -> None:
        await store.insert_async([NewJob(kind="k")])
        await until_async(lambda: store._loop_inserts.connected, "the loop's connection", 10)
        loop = asyncio.get_running_loop()
        proxy.black_hole()
        started = loop.time()
        with pytest.raises(DatabaseError, match=r"within 1s \(call_timeout_s\)"):
            await store.insert_async([NewJob(kind="k")])
        assert loop.time() - started < 1.0 + SLACK_S
        assert not store._loop_inserts.connected  # dropped, to be opened again
        proxy.heal()
        while True:  # the pool's connection is silent too, until the watchdog replaces it
            try:
                await store.insert_async([NewJob(kind="after")])
                break
            except DatabaseError:
                assert loop.time() < started + 5 * SLACK_S, "inserts did not recover"
        await store.close_async()

    with PostgresStore(proxied_url, **QUICK) as store:
        asyncio.run(story(store))
        assert [j.kind for j in store.list_jobs(kind="after")] == ["after"]


# -- failing fast ----------------------------------------------------------------------------


@pytest.mark.parametrize("call", ["list_jobs", "migrate"])  # migrate: unbounded, still probed
def test_an_unreachable_database_fails_fast_in_one_line_naming_the_port(call: str) -> None:
    with closed_port() as port, PostgresStore(f"postgresql://bob:s3cret@127.0.0.1:{port}/x") as s:
        error, took_s = timed(getattr(s, call))
    assert took_s < 5
    assert isinstance(error, DatabaseError)
    message = str(error)
    assert "\n" not in message
    assert f"cannot connect to PostgreSQL at 127.0.0.1:{port}: " in message
    assert "refused" in message  # the driver's reason
    assert "s3cret" not in message
    assert isinstance(error.__cause__, psycopg.OperationalError)


@pytest.mark.parametrize("call", ["list_jobs", "migrate"])
def test_a_server_that_never_answers_fails_within_the_connect_timeout(
    proxy: TcpProxy, proxied_url: str, call: str
) -> None:
    proxy.black_hole(new="ignore")  # connections wait in the backlog, unanswered
    with PostgresStore(proxied_url, **QUICK) as store:
        error, took_s = timed(getattr(store, call))
    assert isinstance(error, DatabaseError)
    assert f"cannot connect to PostgreSQL at 127.0.0.1:{proxy.port}: " in str(error)
    assert "timeout" in str(error)
    assert took_s < 2.0 + SLACK_S


def test_a_call_the_pool_had_no_connection_for_says_none_could_be_made(
    proxy: TcpProxy, proxied_url: str
) -> None:
    """The server vanished after the pool's first connection: that one is abandoned as silent,
    the pool's new ones never open, and the next call says that no connection could be made
    (not that they were all in use, nor that a server refused)."""
    with PostgresStore(proxied_url, **QUICK) as store:
        store.list_jobs()
        proxy.black_hole(new="ignore")
        assert not _works(store.list_jobs)  # its connection went silent and was abandoned
        error, _ = timed(store.list_jobs)
    assert isinstance(error, DatabaseError)
    assert str(error).startswith(
        "listing jobs failed: no connection from the pool within 1s: no connection could be"
        f" made: cannot connect to PostgreSQL at 127.0.0.1:{proxy.port}: "
    )
    assert "timeout" in str(error)


def test_a_malformed_url_is_refused_without_its_password() -> None:
    with pytest.raises(DatabaseError, match="malformed") as raised:
        PostgresStore("postgresql://bob:s3%zzcret@127.0.0.1/x")  # a bad %-escape
    assert "s3" not in str(raised.value)
    assert redact("dsn postgresql://u:pw@h/db password=pw2 x") == (
        "dsn postgresql://u:***@h/db password=*** x"
    )


# -- a real worker whose network goes silent ----------------------------------------------

BLACK_HOLE_S = 18.0  # longer than every default bound (connect 5 s, statement 10 s, call 15 s)
RECOVERY_S = 30.0


def _counts(url: str) -> dict[str, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT state::text, count(*) FROM awa.jobs GROUP BY 1").fetchall()
    return {state: n for state, n in rows}


def _db_now(url: str) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    return row[0]


def test_a_black_holed_worker_resumes_within_30s_of_the_heal(
    proxy: TcpProxy, store: PostgresStore, pg_clean_url: str
) -> None:
    url = pg_clean_url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS worker_events (worker text, job_id bigint, event text,"
            " detail text, at timestamptz NOT NULL DEFAULT clock_timestamp())"
        )
        conn.execute("TRUNCATE worker_events")
    log_path = Path(tempfile.mkdtemp(prefix="awa-network-")) / "worker.log"
    command = [sys.executable, str(WORKER), proxy.url(url), "cut", "nap", "--events-url", url]
    command += ["--concurrency", "4", "--nap", "0.1", "--heartbeat-interval", "0.5"]
    command += ["--staleness", "3"]
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
    try:

        def check(condition: Callable[[], T], what: str, timeout_s: float) -> T:
            try:
                return until(condition, what, timeout_s)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{log_path.read_text(errors='replace')}") from None

        def ready() -> bool:
            with psycopg.connect(url, autocommit=True) as conn:
                return (
                    conn.execute("SELECT 1 FROM worker_events WHERE event = 'ready'").fetchone()
                    is not None
                )

        check(ready, "the worker started", 20)
        store.insert([NewJob(kind="work", args={"name": "n"}) for _ in range(200)])
        check(lambda: _counts(url).get("completed", 0) >= 20, "the worker is working", 20)

        proxy.black_hole()
        threading.Event().wait(1.0)  # statements already at the server may still land
        before = _counts(url)
        threading.Event().wait(BLACK_HOLE_S - 1.0)  # the fault itself: nothing gets through
        during = _counts(url)
        assert during.get("completed", 0) == before.get("completed", 0) < 200
        proxy.heal()
        healed_at, healed_db = time.monotonic(), _db_now(url)

        check(
            lambda: _counts(url).get("completed", 0) == 200,
            "every job completed after the heal",
            RECOVERY_S,
        )
        all_done_s = time.monotonic() - healed_at
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT min(attempted_at) - %(heal)s, min(finalized_at) - %(heal)s FROM awa.jobs"
                " WHERE attempted_at > %(heal)s",
                {"heal": healed_db},
            ).fetchone()
        assert row is not None
        assert row[0] is not None, "no job was claimed after the heal"
        claimed_s, completed_s = row[0].total_seconds(), row[1].total_seconds()
        print(
            f"\nblack hole {BLACK_HOLE_S:g}s with {during.get('completed', 0)}/200 completed;"
            f" after the heal: first claim {claimed_s:.1f}s, first completion of a job claimed"
            f" after it {completed_s:.1f}s, all 200 completed {all_done_s:.1f}s"
        )
        assert all_done_s < RECOVERY_S
        assert all(job.state is JobState.COMPLETED for job in store.list_jobs(limit=1000))
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=20) == 0  # nothing wedged: it shuts down cleanly
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=20)
