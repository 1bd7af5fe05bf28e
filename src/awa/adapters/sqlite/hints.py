"""Wake-up hints between processes sharing one SQLite file, which has no LISTEN/NOTIFY.

A store writes each hint as a row of ``awa_hints`` in the transaction that causes it, and
hands it to its own listeners at commit. ``HintPoller`` carries the other processes' hints:
a thread with a connection of its own asks ``PRAGMA data_version`` every ``interval_s`` (a
counter that moves only when another connection commits, so an idle poll reads no table) and,
when it moved, reads the hint rows it has not seen. A hint is at most ``interval_s`` late;
the runtime's own polling stays the source of truth when a hint is lost.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

from awa.adapters.sqlite._sql import SQL
from awa.domain import Lease
from awa.ports import CallbackResolved, CancelRequested, Event, JobsAvailable

__all__ = ["HintPoller", "event_of"]


def event_of(kind: str, queue: str | None, job_id: int | None, run_lease: int | None) -> Event:
    """The event a hint row stands for."""
    if kind == "available" and queue is not None:
        return JobsAvailable(queue)
    if job_id is None or run_lease is None:
        raise AssertionError(f"a {kind!r} hint without its lease")
    lease = Lease(job_id, run_lease)
    return CancelRequested(lease) if kind == "cancel" else CallbackResolved(lease)


class HintPoller:
    """Reads other processes' hints on a thread; ``deliver`` gets each one."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        origin: str,
        interval_s: float,
        deliver: Callable[[Event], None],
    ) -> None:
        self._conn = connect()
        self._origin = origin
        self._interval_s = interval_s
        self._deliver = deliver
        self._stop = threading.Event()
        self._last = int(self._conn.execute(SQL["last_hint"]).fetchone()[0])
        self._version = self._data_version()
        self._thread = threading.Thread(target=self._run, name="awa-sqlite-hints", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _data_version(self) -> int:
        return int(self._conn.execute(SQL["data_version"]).fetchone()[0])

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._interval_s):
                version = self._data_version()
                if version == self._version:
                    continue  # nobody committed: nothing read
                self._version = version
                rows = self._conn.execute(
                    SQL["read_hints"], {"after": self._last, "origin": self._origin}
                ).fetchall()
                for hint_id, kind, queue, job_id, run_lease in rows:
                    self._last = hint_id
                    self._deliver(event_of(kind, queue, job_id, run_lease))
        except sqlite3.Error:
            pass  # the file went away or is closing: hints stop, polling carries on
        finally:
            self._conn.close()

    def stop(self) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
