"""A real PostgreSQL for the tests that need one: a pytest plugin, registered by the root
``tests/conftest.py`` (``pytest_plugins``), so every test folder shares one server per session.

Where the server comes from, in order:

1. ``AWA_TEST_DATABASE_URL``, when set (it needs the right to create databases);
2. a throwaway cluster started from the local PostgreSQL binaries (``pg_config --bindir``, or
   the newest ``/usr/lib/postgresql/*/bin``) in a temporary directory, stopped at session end;
3. a testcontainers PostgreSQL, when Docker answers.

pytest-postgresql is not used for (2): it runs ``initdb`` and ``pg_ctl`` as the current user,
and PostgreSQL refuses to run as root, which is how CI and the dev machines run. The fixture
below starts the cluster as the ``postgres`` system user (``runuser``) when it is root, and as
itself otherwise.

With none of the three, the tests fail under ``CI`` (a missing database must never pass as a
green run) and are skipped locally with the reason.

Isolation: one database migrated once per session; every test starts from empty tables
(``TRUNCATE ... RESTART IDENTITY``, a few milliseconds, so ids start at 1 as in the memory
store). Tests that need a database of their own (migrations, unmigrated) get a fresh one;
tests that restart the server (``own_cluster``) get a server of their own, from (2).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool

from awa.adapters.postgres import migrate
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.migrations import MIGRATIONS

__all__ = [
    "LocalCluster",
    "create_database",
    "empty_database",
    "migrate_before",
    "own_cluster",
    "pg_clean_url",
    "pg_pool",
    "pg_server_url",
    "pg_url",
    "truncate",
]

_TABLES = (
    "awa.jobs, awa.dlq, awa.queues, awa.leader, awa.schedules, awa.workers, awa.queue_summary,"
    " awa.flow_key_buckets"
)


# -- where the server comes from ----------------------------------------------------------------


def _bindir() -> Path | None:
    if os.environ.get("AWA_PG_BINDIR"):
        return Path(os.environ["AWA_PG_BINDIR"])
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        candidate = Path(out.stdout.strip())
        if (candidate / "initdb").exists():
            return candidate
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    return Path(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalCluster:
    """initdb + pg_ctl in a temporary directory; as the ``postgres`` user when we are root."""

    def __init__(self, bindir: Path, *, durable: bool = False) -> None:
        self.bindir = bindir
        self.base = Path(tempfile.mkdtemp(prefix="awa-pg-"))
        self.data = self.base / "data"
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.base, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.durable = durable
        self.url = ""  # the maintenance database's, once started

    def _run(self, *args: str) -> None:
        result = subprocess.run([*self.as_user, *args], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            log = self.base / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {result.stdout}{result.stderr}{tail}")

    def start(self) -> str:
        self._run(
            str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        self.resume()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        return self.url

    def resume(self) -> None:
        """Start the server (again, after ``halt``) on the same port."""
        options = [
            f"-p {self.port}",
            f"-k {self.base}",
            "-c listen_addresses=127.0.0.1",
            "-c max_connections=200",
        ]
        if not self.durable:  # tests: losing data on a crash is fine, speed is not
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.base / "server.log"),
            "-w", "-t", "60", "-o", " ".join(options), "start",
        )  # fmt: skip

    def halt(self) -> None:
        """Stop the server in fast mode, keeping its data: ``resume`` starts it again."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", "-m", "fast", "stop")

    def restart(self) -> None:
        """``pg_ctl restart`` in fast mode: every client is disconnected (its open
        transactions rolled back) and the server is back on the same port when this returns."""
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.base / "server.log"),
            "-w", "-t", "60", "-m", "fast", "restart",
        )  # fmt: skip

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"no PostgreSQL for the postgres tests under CI: {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL: {reason}")


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """A URL to a maintenance database on a server where tests may create databases."""
    url = os.environ.get("AWA_TEST_DATABASE_URL")
    if url:
        yield url
        return
    problems = []
    bindir = _bindir()
    if bindir is not None:
        cluster = LocalCluster(bindir)
        try:
            url = cluster.start()
        except (OSError, RuntimeError, KeyError, subprocess.SubprocessError) as exc:
            problems.append(f"local cluster from {bindir}: {exc}")
            shutil.rmtree(cluster.base, ignore_errors=True)
        else:
            try:
                yield url
            finally:
                cluster.stop()
            return
    else:
        problems.append("no PostgreSQL binaries (set AWA_PG_BINDIR or put pg_config on PATH)")
    try:
        from testcontainers.postgres import PostgresContainer

        container = PostgresContainer("postgres:16", driver=None)
        container.start()
    except Exception as exc:  # Docker absent or not answering
        problems.append(f"testcontainers: {exc}")
        _unavailable("; ".join(problems))
        return
    try:
        yield container.get_connection_url()
    finally:
        container.stop()


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[LocalCluster]:
    """A started PostgreSQL server for one test module alone, for tests that restart or stop
    it (the session's server is shared). It needs the local binaries, whatever
    ``AWA_TEST_DATABASE_URL`` says; stopped and removed when the module's tests end."""
    bindir = _bindir()
    if bindir is None:
        _unavailable("no PostgreSQL binaries for a cluster of the test's own")
        return
    cluster = LocalCluster(bindir)
    try:
        cluster.start()
    except (OSError, RuntimeError, KeyError, subprocess.SubprocessError) as exc:
        shutil.rmtree(cluster.base, ignore_errors=True)
        _unavailable(f"local cluster from {bindir}: {exc}")
        return
    try:
        yield cluster
    finally:
        cluster.stop()


def _with_dbname(url: str, dbname: str) -> str:
    params = conninfo_to_dict(url)
    params["dbname"] = dbname
    return make_conninfo(**params)


@pytest.fixture(scope="session")
def create_database(pg_server_url: str) -> Iterator[Callable[..., str]]:
    """Makes empty databases on the test server; drops them at session end."""
    made: list[str] = []

    def create(icu_locale: str | None = None) -> str:
        """``icu_locale``: the database's default collation is that ICU locale's, not the
        cluster's "C" (a user's database sorts text by its language)."""
        name = f"awa_test_{uuid.uuid4().hex[:12]}"
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if icu_locale is not None:
            statement += sql.SQL(" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE {}").format(
                sql.Literal(icu_locale)
            )
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(statement)
        made.append(name)
        return _with_dbname(pg_server_url, name)

    yield create
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        for name in made:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def empty_database(create_database: Callable[[], str]) -> str:
    """A database of its own that awa never migrated."""
    return create_database()


@pytest.fixture(scope="session")
def pg_url(create_database: Callable[[], str]) -> str:
    """The session's migrated database."""
    url = create_database()
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
    return url


@pytest.fixture(scope="session")
def pg_pool(pg_url: str) -> Iterator[ConnectionPool[Any]]:
    pool: ConnectionPool[Any] = ConnectionPool(
        pg_url, min_size=2, max_size=20, kwargs={"autocommit": True}, open=True
    )
    # the pool's threads draw each new connection's lifetime jitter from the global `random`;
    # one drawing while Hypothesis generates an example warns "Do not use the random module
    # inside strategies": have the first connections made before any test runs
    pool.wait()
    yield pool
    pool.close()


def migrate_before(conn: psycopg.Connection[Any], version: int) -> None:
    """The schema as a release before migration ``version`` left it: every earlier migration
    applied and recorded, so that ``migrate`` then applies ``version`` and later ones."""
    with conn.transaction():
        conn.execute(SQL["create_schema"])
        conn.execute(SQL["create_ledger"])
        for m in MIGRATIONS:
            if m.version < version:
                conn.execute(m.sql.encode())
                params = {"version": m.version, "name": m.name, "checksum": m.checksum}
                conn.execute(SQL["record_migration"], params)


def truncate(pool: ConnectionPool[Any]) -> None:
    with pool.connection() as conn:
        conn.execute(f"TRUNCATE {_TABLES} RESTART IDENTITY")


@pytest.fixture
def pg_clean_url(pg_url: str, pg_pool: ConnectionPool[Any]) -> str:
    """The session's migrated database, emptied for this test (ids start at 1 again)."""
    truncate(pg_pool)
    return pg_url
