"""A store call run while another session holds a lock it needs: started on a thread of its
own, and handed back once the server shows it waiting for that lock (``pg_stat_activity``),
a signal rather than a sleep."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import psycopg

__all__ = ["Blocked", "start_blocked"]

T = TypeVar("T")


class Blocked(Generic[T]):
    """A call started by ``start_blocked``."""

    def __init__(self, action: Callable[[], T]) -> None:
        self._outcome: list[T | BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(action,))

    def _run(self, action: Callable[[], T]) -> None:
        try:
            self._outcome.append(action())
        except BaseException as exc:  # handed to the test to assert on
            self._outcome.append(exc)

    def start(self) -> None:
        self._thread.start()

    @property
    def waiting(self) -> bool:
        """Whether the call is still under way (waiting for the lock)."""
        return self._thread.is_alive()

    def outcome(self) -> T | BaseException:
        """What the call returned or raised, once it ends."""
        self._thread.join()
        return self._outcome[0]


def start_blocked(holder: psycopg.Connection[Any], action: Callable[[], T]) -> Blocked[T]:
    """Start ``action``; return once a session of ``holder``'s database waits for a lock, or
    the call has ended (without waiting: ``Blocked.waiting`` is then false)."""
    blocked = Blocked(action)
    blocked.start()
    with psycopg.connect(holder.info.dsn, autocommit=True) as watcher:
        for _ in range(3000):
            row = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if (row and row[0]) or not blocked.waiting:
                break
            watcher.execute("SELECT pg_sleep(0.01)")  # the poll period
    return blocked
