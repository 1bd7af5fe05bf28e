"""Bounded connections: how long the PostgreSQL adapter waits for the network, and what it does
when the network stops answering.

Every connection the adapter opens (the pool's, the listener's, the event loop's insert
connection) gets:

* a **connect timeout** (``connect_timeout``), so an unreachable server is an error within
  seconds, naming host, port and the driver's reason, never a pool timeout that hides them;
* **TCP keepalives** and a **TCP user timeout** (``keepalives*``, ``tcp_user_timeout``), so the
  kernel notices a peer that vanished: an idle connection whose peer is gone fails at once when
  next used instead of hanging, and sent data that stays unacknowledged breaks the connection;
* on the store's own pool, a server-side **statement timeout** (``statement_timeout``), so a
  statement stuck behind a lock ends with a clear error and the connection stays usable;
* on the store's own pool, a server-side **idle-in-transaction timeout**
  (``idle_in_transaction_session_timeout``) and the server's own **TCP keepalives**
  (``tcp_keepalives_*``): the server learns of a vanished client only from its own socket, two
  hours later by the kernel's default, and meanwhile a transaction the client abandoned keeps
  its row locks. The server now ends such a session within seconds.

None of these sees every silent failure: a userspace proxy or middlebox that keeps the TCP
session alive but forwards nothing makes the kernel acknowledge every byte. So every call also
has a client-side bound, kept by the ``Watchdog``: one daemon thread per process that, when a
call outlives its bound, shuts the call's socket down (``shutdown(SHUT_RDWR)`` on a duplicate of
its descriptor). The call blocked in psycopg's ``wait()`` then fails at once, the failure is
reported as a ``DatabaseError`` that says what happened, the pool discards the broken
connection, and, because a silent connection suggests its siblings on the same path are silent
too, the pool is drained so that every idle connection is replaced.

After its server refused connections for a while (a connection storm, a restart), the pool
would wait out psycopg_pool's doubling reconnect backoff, up to 16 s and more, while a fresh
connection succeeded at once: the attempts sleeping in that backoff held the pool's slots, so
no call could make it try sooner. A store's own pool gives up a run of attempts after
``RECONNECT_TIMEOUT_S`` and, if a call is waiting, starts a new one at once (``reconnect_soon``):
attempts stay about a second apart for as long as the server refuses.
"""

from __future__ import annotations

import atexit
import math
import os
import re
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import Any

import attrs
import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from awa.domain import DatabaseError, ValidationError
from awa.domain.validation import check_seconds
from awa.redaction import redact

__all__ = [
    "CALL_TIMEOUT_S_DEFAULT",
    "CONNECT_TIMEOUT_S_DEFAULT",
    "IDLE_IN_TRANSACTION_TIMEOUT_S_DEFAULT",
    "KEEPALIVES_COUNT",
    "KEEPALIVES_IDLE_S",
    "KEEPALIVES_INTERVAL_S",
    "PING_ACQUIRE_S",
    "RECONNECT_TIMEOUT_S",
    "STATEMENT_TIMEOUT_S_DEFAULT",
    "WATCHDOG",
    "Bounds",
    "Connect",
    "PoolCalls",
    "Watch",
    "Watchdog",
    "abandon",
    "close_at_exit",
    "connect_options",
    "connector",
    "reconnect_soon",
    "redact",
    "session_options",
    "unreachable",
    "where",
]

#: how long a ping waits for an idle pooled connection before it opens one of its own
PING_ACQUIRE_S = 0.05
#: how long opening a connection may take (libpq counts whole seconds, at least 2)
CONNECT_TIMEOUT_S_DEFAULT = 5.0
#: the server cancels a store statement running longer than this
STATEMENT_TIMEOUT_S_DEFAULT = 10.0
#: a store call's bound: waiting for a pooled connection, then using it, each at most this long
CALL_TIMEOUT_S_DEFAULT = 15.0
#: the server ends a store session left idle inside a transaction this long: awa never pauses
#: a transaction of its own for more than moments, so such a session is one its client
#: abandoned (the watchdog, a crash, a partition), and its row locks hold other writes back
IDLE_IN_TRANSACTION_TIMEOUT_S_DEFAULT = 15.0
#: an idle connection is probed after this many seconds of silence ...
KEEPALIVES_IDLE_S = 10
#: ... every this many seconds ...
KEEPALIVES_INTERVAL_S = 5
#: ... and declared dead after this many unanswered probes
KEEPALIVES_COUNT = 3
#: a store's own pool retries a failed connection with psycopg_pool's backoff (1 s, doubling)
#: for this long, then starts again from the first delay if a call waits (``reconnect_soon``)
RECONNECT_TIMEOUT_S = 2.0

Connect = Callable[[], psycopg.Connection[Any]]
Pool = ConnectionPool[Any]


@attrs.frozen
class Bounds:
    """How long a store waits for its database. See ``docs/postgres.md``."""

    connect_timeout_s: float = CONNECT_TIMEOUT_S_DEFAULT
    statement_timeout_s: float | None = STATEMENT_TIMEOUT_S_DEFAULT
    call_timeout_s: float = CALL_TIMEOUT_S_DEFAULT
    idle_in_transaction_timeout_s: float | None = IDLE_IN_TRANSACTION_TIMEOUT_S_DEFAULT

    @classmethod
    def checked(
        cls,
        connect_timeout_s: object = CONNECT_TIMEOUT_S_DEFAULT,
        statement_timeout_s: object = STATEMENT_TIMEOUT_S_DEFAULT,
        call_timeout_s: object = CALL_TIMEOUT_S_DEFAULT,
        idle_in_transaction_timeout_s: object = IDLE_IN_TRANSACTION_TIMEOUT_S_DEFAULT,
    ) -> Bounds:
        """The bounds, refused with a ``ValidationError`` unless each is a positive number of
        seconds (``statement_timeout_s`` and ``idle_in_transaction_timeout_s`` may be
        ``None``: the server's own setting) and the client-side bound leaves the server's
        cancel room to come first."""
        connect = check_seconds("connect_timeout_s", connect_timeout_s, allow_zero=False)
        call = check_seconds("call_timeout_s", call_timeout_s, allow_zero=False)
        statement = None
        if statement_timeout_s is not None:
            statement = check_seconds("statement_timeout_s", statement_timeout_s, allow_zero=False)
            if call <= statement:
                raise ValidationError(
                    f"call_timeout_s ({call:g}) must be longer than statement_timeout_s"
                    f" ({statement:g}), so that the server cancels a slow statement before the"
                    " client abandons its connection"
                )
        idle = None
        if idle_in_transaction_timeout_s is not None:
            idle = check_seconds(
                "idle_in_transaction_timeout_s", idle_in_transaction_timeout_s, allow_zero=False
            )
        return cls(connect, statement, call, idle)

    @property
    def connect_timeout(self) -> str:
        """libpq's ``connect_timeout``: whole seconds, rounded up (libpq's minimum is 2)."""
        return str(max(2, math.ceil(self.connect_timeout_s)))


# -- connection options ----------------------------------------------------------------------


def _params(conninfo: str) -> dict[str, Any]:
    try:
        return conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        raise DatabaseError(
            f"the database URL is malformed: {redact(_one_line(exc), [conninfo])}"
        ) from None


def connect_options(conninfo: str, kwargs: dict[str, Any], bounds: Bounds) -> dict[str, Any]:
    """``kwargs`` plus the adapter's TCP options for each one neither ``kwargs`` nor the URL
    sets: keepalives, a TCP user timeout of ``call_timeout_s`` and the connect timeout."""
    given = _params(conninfo)
    defaults = {
        "connect_timeout": bounds.connect_timeout,
        "keepalives": "1",
        "keepalives_idle": str(KEEPALIVES_IDLE_S),
        "keepalives_interval": str(KEEPALIVES_INTERVAL_S),
        "keepalives_count": str(KEEPALIVES_COUNT),
        "tcp_user_timeout": str(math.ceil(bounds.call_timeout_s * 1000)),
    }
    options = dict(kwargs)
    for name, value in defaults.items():
        if name not in options and name not in given:
            options[name] = value
    return options


def session_options(conninfo: str, bounds: Bounds) -> str:
    """libpq's ``options`` for the store's pool: the server's TCP keepalives (which the URL's
    own options may change), the URL's options, then UTC, the statement timeout and the
    idle-in-transaction timeout (later ``-c`` settings win)."""
    parts = [
        f"-c tcp_keepalives_idle={KEEPALIVES_IDLE_S}",
        f"-c tcp_keepalives_interval={KEEPALIVES_INTERVAL_S}",
        f"-c tcp_keepalives_count={KEEPALIVES_COUNT}",
        _params(conninfo).get("options") or "",
        "-c TimeZone=UTC",
    ]
    if bounds.statement_timeout_s is not None:
        parts.append(f"-c statement_timeout={_ms(bounds.statement_timeout_s)}")
    if bounds.idle_in_transaction_timeout_s is not None:
        idle = _ms(bounds.idle_in_transaction_timeout_s)
        parts.append(f"-c idle_in_transaction_session_timeout={idle}")
    return " ".join(part for part in parts if part)


def _ms(seconds: float) -> int:
    return math.ceil(seconds * 1000)


def connector(
    conninfo: Any, kwargs: Any, bounds: Bounds, *, application_name: str | None = None
) -> Connect:
    """A ``Connect`` for a dedicated autocommit connection to a pool's server (``conninfo`` and
    ``kwargs`` as the pool holds them: values, or callables), with the adapter's TCP options."""

    def connect() -> psycopg.Connection[Any]:
        info = conninfo() if callable(conninfo) else (conninfo or "")
        given = dict((kwargs() if callable(kwargs) else kwargs) or {})
        options = connect_options(info, given, bounds)
        options["autocommit"] = True
        if application_name is not None:
            options["application_name"] = application_name
        try:
            return psycopg.connect(info, **options)
        except psycopg.OperationalError as exc:
            raise unreachable(info, options, exc) from exc

    return connect


# -- messages ----------------------------------------------------------------------------------
# ``redact`` (re-exported here) is ``awa.redaction.redact``: the one way awa hides a password


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def where(conninfo: str, kwargs: dict[str, Any] | None = None) -> str:
    """``host:port`` of a connection string for messages (libpq's defaults when unset)."""
    try:
        params = conninfo_to_dict(conninfo, **(kwargs or {}))
    except psycopg.Error:
        return "an unparseable address"
    host = params.get("host") or params.get("hostaddr") or os.environ.get("PGHOST") or "localhost"
    port = params.get("port") or os.environ.get("PGPORT") or "5432"
    return f"{host}:{port}"


def unreachable(conninfo: str, kwargs: dict[str, Any], exc: BaseException) -> DatabaseError:
    """One line for a failed connection: host, port and the driver's reason, no password."""
    reason = redact(_one_line(exc), [conninfo])
    return DatabaseError(f"cannot connect to PostgreSQL at {where(conninfo, kwargs)}: {reason}")


# libpq puts the server's own error after its severity: the server answered, and refused
_SERVER_REFUSAL = re.compile(r"\b(FATAL|PANIC|ERROR):")


def refused_by_server(exc: BaseException) -> bool:
    """Whether a failed connection reached a server that refused it (too many clients, a
    database closed to connections, authentication) rather than no server at all."""
    return isinstance(exc, psycopg.Error) and bool(_SERVER_REFUSAL.search(str(exc)))


def reconnect_soon(pool: Pool) -> None:
    """psycopg_pool's ``reconnect_failed``: a run of attempts to open a connection gave up
    (after ``RECONNECT_TIMEOUT_S``). If a call is waiting for a connection, the pool grows for
    it again at once (``check`` does so when it has room), from the first delay on."""
    if pool.get_stats().get("requests_waiting", 0):
        pool.check()


# -- the watchdog ----------------------------------------------------------------------------


def abandon(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    """Shut the connection's socket down under a call blocked on it: the call fails at once
    instead of waiting for an answer that will not come. Safe from any thread: the socket is
    not closed (its descriptor stays the connection's), only shut down."""
    with suppress(OSError, psycopg.Error, ValueError):
        fd = conn.fileno()
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)


class Watch:
    """One bounded call on one connection (``Watchdog.watch``). Leaving the block with an error
    after the bound fired raises ``DatabaseError`` saying so; leaving it after the bound fired
    in any way closes the connection, so that a pool discards it."""

    def __init__(
        self, watchdog: Watchdog, conn: psycopg.Connection[Any], bound_s: float, action: str
    ) -> None:
        self._watchdog = watchdog
        self.conn = conn
        self.bound_s = bound_s
        self.action = action
        self.started_at = 0.0
        self.deadline = 0.0
        self.fired = False

    def __enter__(self) -> Watch:
        self.started_at = time.monotonic()
        self.deadline = self.started_at + self.bound_s
        self._watchdog._add(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._watchdog._remove(self)
        if not self.fired:
            return
        with suppress(Exception):
            self.conn.close()
        if isinstance(exc, Exception):
            raise DatabaseError(
                f"{self.action} failed: no answer from the database within {self.bound_s:g}s"
                " (call_timeout_s); the connection was abandoned"
            ) from exc


class Watchdog:
    """Abandons the connection of every call that outlives its bound (``abandon``).

    One daemon thread for all the watches of a process, started by the first one. It sleeps
    until the earliest deadline among the calls in progress (at most a pool's worth), so a
    call costs a lock and a set insertion; the thread wakes only when a call runs late or the
    first call arrives."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._watches: set[Watch] = set()
        self._wake_at = math.inf
        self._pid = os.getpid()
        self._thread: threading.Thread | None = None

    def watch(self, conn: psycopg.Connection[Any], bound_s: float, action: str) -> Watch:
        """``with watchdog.watch(conn, bound_s, "claiming jobs"): ...``"""
        return Watch(self, conn, bound_s, action)

    @property
    def watching(self) -> int:
        """Calls in progress (for tests)."""
        with self._lock:
            return len(self._watches)

    def _add(self, watch: Watch) -> None:
        if self._pid != os.getpid():  # a forked child: the parent's thread is not here
            self._reset()
        with self._lock:
            self._watches.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="awa-watchdog", daemon=True)
                self._thread.start()
            if watch.deadline < self._wake_at:
                self._wake_at = watch.deadline
                self._changed.notify()

    def _remove(self, watch: Watch) -> None:
        with self._lock:  # after this, the thread cannot touch the connection any more
            self._watches.discard(watch)

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                wake_at = math.inf
                for watch in self._watches:
                    if watch.fired:
                        continue
                    if watch.deadline <= now:
                        watch.fired = True
                        abandon(watch.conn)  # under the lock: the call is still in progress
                    else:
                        wake_at = min(wake_at, watch.deadline)
                self._wake_at = wake_at
                self._changed.wait(None if wake_at == math.inf else wake_at - now)


#: the process's watchdog
WATCHDOG = Watchdog()


# -- pools left open -------------------------------------------------------------------------

#: the pools stores opened, with the process that opened each, until they are closed
_OPEN_POOLS: weakref.WeakKeyDictionary[Pool, int] = weakref.WeakKeyDictionary()


def close_at_exit(pool: Pool) -> None:
    """Close ``pool`` when the interpreter exits, if nobody closed it before.

    A script that never closes its client would otherwise leave the pool to psycopg_pool's
    ``__del__`` during the interpreter's finalization, which on Python 3.13 waits 5 s for each
    of the pool's threads and cannot stop them: 20 s before the process ends. ``atexit`` runs
    while the threads still run. A forked child leaves its parent's pools alone: their
    sockets are the parent's."""
    _OPEN_POOLS[pool] = os.getpid()


@atexit.register
def _close_open_pools() -> None:
    for pool, pid in list(_OPEN_POOLS.items()):
        if pid == os.getpid() and not pool.closed:
            with suppress(Exception):
                pool.close(timeout=1.0)


# -- the store's calls -------------------------------------------------------------------------


class PoolCalls:
    """The store's way to a pooled connection: a bounded wait for it, a bounded use of it.

    ``probe`` opens one connection of the pool's server outside the pool. With
    ``probe_first`` (a pool the store opened itself) it runs before the pool is first used, so
    that an unreachable server is a one-line error within the connect timeout; a pool that
    cannot hand out a connection in time is diagnosed with it too.
    """

    def __init__(
        self,
        pool: Pool,
        bounds: Bounds,
        *,
        probe: Connect,
        probe_first: bool,
        watchdog: Watchdog = WATCHDOG,
    ) -> None:
        self._pool = pool
        self._bounds = bounds
        self._probe = probe
        self._watchdog = watchdog
        self._reached = not probe_first
        self._acquire_s = min(pool.timeout, bounds.call_timeout_s)
        self._drained_at = 0.0
        self._lent = 0  # connections handed out to calls and not yet back
        self._lent_lock = threading.Lock()

    @contextmanager
    def connection(self, action: str, *, bounded: bool = True) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for ``action``, its use bounded by ``call_timeout_s`` unless
        ``bounded`` is false (a migration, which may rightly run for minutes): the wait for it
        and the diagnosis of an unreachable server are the same either way."""
        if not self._reached:
            self._check_reachable(action)
        acquired = False
        try:
            with self._pool.connection(timeout=self._acquire_s) as conn, self._lending():
                acquired = self._reached = True
                if not bounded:
                    yield conn
                    return
                began = time.monotonic()
                watch = self._watchdog.watch(conn, self._bounds.call_timeout_s, action)
                try:
                    with watch:
                        yield conn
                finally:
                    if (watch.fired or conn.broken) and began > self._drained_at:
                        # the first connection found dead since the last drain (gone silent,
                        # or closed by a server that restarted): its idle siblings probably
                        # died with it, so replace them all rather than fail a call on each
                        self._drained_at = time.monotonic()
                        self._pool.drain()
        except PoolTimeout as exc:
            if acquired:
                raise
            raise self._explain(action, exc) from exc

    def ping(self, action: str, run: Callable[[psycopg.Connection[Any]], object]) -> None:
        """``run`` one round trip on an idle pooled connection, or, when none is idle at once
        or the idle one is broken (its server restarted or went away), on a connection of its
        own: a server that refuses connections is said at once, naming host, port and reason,
        not after the wait for the pool to reconnect. Bounded like every call."""
        if self._reached:
            try:
                with self._pool.connection(timeout=PING_ACQUIRE_S) as conn:
                    try:
                        with self._watchdog.watch(conn, self._bounds.call_timeout_s, action):
                            run(conn)
                        return
                    except psycopg.OperationalError:
                        if not conn.broken:
                            raise  # the server answered, with an error: that is the answer
            except PoolTimeout:
                pass  # every connection is busy, or the pool is reconnecting
        try:
            conn = self._probe()
        except DatabaseError as exc:
            raise DatabaseError(f"{action} failed: {exc}") from exc.__cause__
        with conn, self._watchdog.watch(conn, self._bounds.call_timeout_s, action):
            run(conn)
        self._reached = True

    @contextmanager
    def _lending(self) -> Iterator[None]:
        with self._lent_lock:
            self._lent += 1
        try:
            yield
        finally:
            with self._lent_lock:
                self._lent -= 1

    def _check_reachable(self, action: str) -> None:
        try:
            self._probe().close()
        except DatabaseError as exc:
            raise DatabaseError(f"{action} failed: {exc}") from exc.__cause__

    def _explain(self, action: str, exc: PoolTimeout) -> DatabaseError:
        """Why no pooled connection came, from a new connection's fate and the pool's state:
        none could be made, the server refused it, all were in use, or the pool was still
        reopening connections after failed attempts while a new one succeeds."""
        waited = f"{action} failed: no connection from the pool within {self._acquire_s:g}s"
        try:
            self._probe().close()
        except DatabaseError as failed:
            if refused_by_server(failed.__cause__ or failed):
                return DatabaseError(f"{waited}: the server refuses new connections: {failed}")
            return DatabaseError(f"{waited}: no connection could be made: {failed}")
        except psycopg.Error:  # the server answers, but not to this probe: the pool's error
            return DatabaseError(f"{waited}: {type(exc).__name__}: {exc}")
        size = self._pool.max_size
        with self._lent_lock:
            lent = self._lent
        if lent >= size:
            return DatabaseError(f"{waited}: all {size} of its connections were in use")
        failures = self._pool.get_stats().get("connections_errors", 0)
        if failures:
            return DatabaseError(
                f"{waited}: {lent} of its {size} connections were in use, and it was still"
                f" opening the others again after failed attempts ({failures} so far), though"
                " a new connection succeeds now"
            )
        return DatabaseError(
            f"{waited}: {lent} of its {size} connections were in use by this store's calls;"
            " the others were in use elsewhere (a pool shared with other code?)"
        )
