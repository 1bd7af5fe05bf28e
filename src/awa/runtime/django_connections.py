"""Django's database connections around each handler, in a process that has Django configured.

Django opens one connection per thread and counts on its request signals to close the ones
that broke or outlived ``CONN_MAX_AGE`` (``django.db.close_old_connections``). A worker serves
no requests, so without this a connection that a database restart broke stays on its thread
for good, and every job that thread runs fails with ``OperationalError: the connection is
closed``. Celery's Django support does the same around every task.

It runs where the handler's own connections are: a sync handler's thread, and for an async
handler asgiref's thread-sensitive thread, where ``sync_to_async`` and Django's async ORM run
database calls by default. Django is never imported: a process that has not imported
``django.db`` has no Django connection, and one whose settings are not configured has
opened none.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SharedThreadCloser", "configured", "recycled"]

log = logging.getLogger("awa.runtime")


def configured() -> bool:
    """Has this process imported Django's database layer and configured its settings?"""
    conf = sys.modules.get("django.conf")
    return "django.db" in sys.modules and conf is not None and bool(conf.settings.configured)


def _close_old_connections() -> None:
    """Django's ``close_old_connections()`` for the calling thread's connections, but for
    those in an open transaction (``atomic()``): those belong to code that is still using
    them, such as a Django test case whose async test runs a handler through
    ``awa.testing`` (that handler's ``sync_to_async`` runs on the test's own thread): for
    the same reason Django's test client closes nothing around the requests it makes. A
    failure is logged, never the job's: the handler's outcome stands."""
    if not configured():
        return
    try:
        for connection in sys.modules["django.db"].connections.all(initialized_only=True):
            if not connection.in_atomic_block:
                connection.close_if_unusable_or_obsolete()
    except Exception:
        log.warning("closing Django's old database connections failed", exc_info=True)


@contextmanager
def recycled() -> Iterator[None]:
    """Around a sync handler, on its thread."""
    _close_old_connections()
    try:
        yield
    finally:
        _close_old_connections()


class SharedThreadCloser:
    """Closes Django's old connections on asgiref's thread-sensitive thread after async
    handlers end, without making them wait for it.

    That one thread runs every async handler's database calls, so waiting on it around each
    handler would queue handlers that never touch the database behind those that do (and cut
    a no-op async drain from about 15k to 5k jobs/s). Instead a handler's end queues a close
    there, unless one is queued that has not started: every handler's calls are followed by a
    close on their thread, ahead of any call made after it (the thread runs calls in order).
    Nothing runs before an async handler: with ``CONN_MAX_AGE = 0``, which Django advises under
    ASGI, the close after the last use already closed the connection, and with
    ``CONN_HEALTH_CHECKS`` it made the next use check the connection first.
    """

    def __init__(self) -> None:
        self._queued = False
        self._closing: set[asyncio.Task[None]] = set()

    def handler_ended(self) -> None:
        """An async handler returned or raised (on the event loop)."""
        if self._queued or not configured():
            return
        self._queued = True
        task = asyncio.get_running_loop().create_task(self._close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _close_now(self) -> None:  # on the thread-sensitive thread
        self._queued = False  # a handler ending from now on needs a close after this one
        _close_old_connections()

    async def _close(self) -> None:
        from asgiref.sync import sync_to_async  # comes with Django

        try:
            await sync_to_async(self._close_now, thread_sensitive=True)()
        except Exception:  # asgiref refused the call: the next handler's end tries again
            log.warning("closing Django's old database connections failed", exc_info=True)
        finally:
            self._queued = False
