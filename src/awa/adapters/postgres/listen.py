"""Wake-up hints over LISTEN/NOTIFY: one daemon thread, one dedicated connection.

``Subscriptions`` fans the store's notifications out to its listeners. The first subscriber
starts a thread that opens its own autocommit connection (not one from the pool: a pooled
connection goes back to the pool and would stop listening) and ``LISTEN``s on the wake-up, cancel
and callback channels; ``subscribe`` returns once the ``LISTEN`` is active, so a write made right
after it is heard. The last unsubscribe, or ``close()``, stops the thread.

Hints may be lost (a dropped connection, a listener that was slow to start): polling stays the
source of truth. A lost connection is reopened with a bounded backoff; a listener that raises
is logged and the thread goes on.

A connection that goes silent (no reset, no answer) raises nothing while it waits for
notifications, so after ``LIVENESS_CHECK_S`` without hearing anything the thread makes a cheap
round trip (``ping.sql``) bounded by the watchdog (``connections.py``): a silent connection is
abandoned within ``call_timeout_s`` and replaced like a lost one.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.connections import (
    WATCHDOG,
    Bounds,
    Connect,
    Watch,
    Watchdog,
    connector,
)
from awa.domain import DatabaseError, Lease
from awa.ports import CallbackResolved, CancelRequested, Event, JobsAvailable

__all__ = [
    "BACKOFF_MAX_S",
    "CALLBACK_CHANNEL",
    "CANCEL_CHANNEL",
    "LISTENER_APPLICATION_NAME",
    "LIVENESS_CHECK_S",
    "WAKEUP_CHANNEL",
    "Connect",
    "Subscriptions",
    "event_from_notification",
    "pool_connector",
]

log = logging.getLogger("awa.postgres")

# the channels the store's statements notify (notify_wakeup.sql, notify_cancel.sql,
# notify_callback.sql); an application may LISTEN on them too
#: ``LISTEN`` here for ``NOTIFY`` with a queue name as payload when that queue has new work.
WAKEUP_CHANNEL = "awa_wakeup"
#: ``LISTEN`` here for ``{"id": ..., "run_lease": ...}`` when a live attempt was cancelled.
CANCEL_CHANNEL = "awa_cancel"
#: ``LISTEN`` here for ``{"id": ..., "run_lease": ...}`` when the external side answered the
#: callback of that attempt (resumed, completed, failed or retried it).
CALLBACK_CHANNEL = "awa_callback"

#: the listener connection's ``application_name`` (visible in ``pg_stat_activity``)
LISTENER_APPLICATION_NAME = "awa-listener"

BACKOFF_MIN_S = 0.05
BACKOFF_MAX_S = 5.0
#: how long the thread waits for notifications before checking whether it should stop
POLL_S = 0.2
#: after this long without a notification, a round trip checks that the connection is alive
LIVENESS_CHECK_S = 5.0


def _lease(payload: str) -> Lease:
    data = json.loads(payload)
    return Lease(int(data["id"]), int(data["run_lease"]))


def event_from_notification(channel: str, payload: str) -> Event | None:
    """The hint a notification carries; ``None`` for a channel or payload awa does not know."""
    try:
        if channel == WAKEUP_CHANNEL:
            return JobsAvailable(payload)
        if channel == CANCEL_CHANNEL:
            return CancelRequested(_lease(payload))
        if channel == CALLBACK_CHANNEL:
            return CallbackResolved(_lease(payload))
    except (ValueError, KeyError, TypeError):
        log.warning("ignoring a malformed %s notification: %r", channel, payload)
    return None


class _ListenThread:
    """One generation of the listening thread: started by the first subscriber, stopped when
    the last one leaves. A later subscriber starts a new generation."""

    def __init__(
        self,
        connect: Connect,
        dispatch: Callable[[Event], None],
        bounds: Bounds,
        watchdog: Watchdog,
        liveness_s: float,
    ) -> None:
        self._connect = connect
        self._dispatch = dispatch
        self._bounds = bounds
        self._watchdog = watchdog
        self._liveness_s = liveness_s
        self.stopping = threading.Event()
        self.ready = threading.Event()
        self.first_error: BaseException | None = None
        self.connections = 0  # opened so far (for tests and diagnostics)
        self.connected = False  # LISTENing now (for health checks)
        self._attempted = threading.Event()
        self.thread = threading.Thread(target=self._run, name="awa-listen", daemon=True)

    @property
    def ready_timeout_s(self) -> float:
        """How long ``start`` waits for the first ``LISTEN``: a connect, then a bounded call."""
        return self._bounds.connect_timeout_s + self._bounds.call_timeout_s

    def start(self) -> None:
        """Start listening; returns once the LISTEN is active. Raises ``DatabaseError`` (and
        stops) when the first connection cannot be had."""
        self.thread.start()
        self._attempted.wait(self.ready_timeout_s)
        if not self.ready.is_set():
            self.stopping.set()
            if self.first_error is not None:
                raise DatabaseError(
                    f"listening for notifications failed: {self.first_error}"
                ) from self.first_error
            raise DatabaseError(
                f"listening for notifications: no LISTEN in {self.ready_timeout_s:g}s"
            )

    def stop(self, *, join_s: float = 0.0) -> None:
        self.stopping.set()
        if join_s > 0 and self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(join_s)

    def _run(self) -> None:
        backoff_s = BACKOFF_MIN_S
        while not self.stopping.is_set():
            try:
                with self._connect() as conn:
                    self.connections += 1
                    with self._bounded(conn, "listening for notifications"):
                        for channel in (WAKEUP_CHANNEL, CANCEL_CHANNEL, CALLBACK_CHANNEL):
                            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    if self.ready.is_set():
                        log.info("notification connection restored")
                    self.ready.set()
                    self._attempted.set()
                    self.connected = True
                    backoff_s = BACKOFF_MIN_S
                    self._listen(conn)
            except Exception as exc:  # connection lost, server restarting: try again
                was_connected, self.connected = self.connected, False
                if not self._attempted.is_set():
                    self.first_error = exc
                    self._attempted.set()
                    return
                if self.stopping.is_set():
                    return
                if was_connected:  # once per outage, not once per failed attempt
                    log.warning("notification connection lost (%s); reconnecting", exc)
                self.stopping.wait(backoff_s)
                backoff_s = min(backoff_s * 2, BACKOFF_MAX_S)

    def _bounded(self, conn: psycopg.Connection[Any], action: str) -> Watch:
        return self._watchdog.watch(conn, self._bounds.call_timeout_s, action)

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        heard_at = time.monotonic()
        while not self.stopping.is_set():
            for note in conn.notifies(timeout=POLL_S):
                heard_at = time.monotonic()
                event = event_from_notification(note.channel, note.payload)
                if event is not None:
                    self._dispatch(event)
            if time.monotonic() - heard_at >= self._liveness_s:
                # silence: a dead connection would say nothing either, so ask it something
                with self._bounded(conn, "checking the notification connection"):
                    conn.execute(SQL["ping"])
                heard_at = time.monotonic()


class Subscriptions:
    """The store's listeners and the thread that feeds them."""

    def __init__(
        self,
        connect: Connect,
        bounds: Bounds | None = None,
        *,
        watchdog: Watchdog = WATCHDOG,
        liveness_s: float = LIVENESS_CHECK_S,
    ) -> None:
        self._connect = connect
        self._bounds = bounds if bounds is not None else Bounds()
        self._watchdog = watchdog
        self._liveness_s = liveness_s
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Event], None]] = []
        self._thread: _ListenThread | None = None

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)
            if self._thread is None:
                thread = _ListenThread(
                    self._connect, self._dispatch, self._bounds, self._watchdog, self._liveness_s
                )
                try:
                    thread.start()
                except DatabaseError:
                    self._listeners.remove(listener)
                    raise
                self._thread = thread

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)
                if not self._listeners and self._thread is not None:
                    self._thread.stop()
                    self._thread = None

        return unsubscribe

    def _dispatch(self, event: Event) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event)
            except Exception:
                log.exception("a notification listener failed on %s", event)

    @property
    def listening(self) -> bool:
        """Whether a thread is listening (for tests and diagnostics)."""
        with self._lock:
            return self._thread is not None and self._thread.thread.is_alive()

    @property
    def connected(self) -> bool:
        """Whether the listening connection is up now (not reconnecting)."""
        with self._lock:
            return self._thread is not None and self._thread.connected

    def close(self, join_s: float = 2.0) -> None:
        """Drop every listener and stop the thread (waiting up to ``join_s``)."""
        with self._lock:
            self._listeners.clear()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop(join_s=join_s)


def pool_connector(conninfo: Any, kwargs: Any, bounds: Bounds | None = None) -> Connect:
    """A ``Connect`` for the listener's dedicated autocommit connection to the same server as a
    pool (``conninfo`` and ``kwargs`` as the pool holds them: values, or callables), with the
    adapter's keepalives and timeouts (``connections.connect_options``)."""
    return connector(
        conninfo,
        kwargs,
        bounds if bounds is not None else Bounds(),
        application_name=LISTENER_APPLICATION_NAME,
    )
