"""Django's database connections around each handler, in a process that has Django configured.

Django opens one connection per thread and counts on its request signals to close the ones
that broke or outlived ``CONN_MAX_AGE`` (``django.db.close_old_connections``). A worker serves
no requests, so without this a connection that a database restart broke stays on its thread
for good, and every job that thread runs fails with ``OperationalError: the connection is
closed``. Celery and procrastinate do the same around every task.

It runs where the handler's own connections are: a sync handler's thread, and for an async
handler asgiref's thread-sensitive thread, where ``sync_to_async`` and Django's async ORM run
database calls by default. Django is never imported: a process that has not imported
``django.db`` has no Django connection, and one whose settings are not configured has
opened none.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["around_async", "configured", "recycled"]

log = logging.getLogger("awa.runtime")


def configured() -> bool:
    """Has this process imported Django's database layer and configured its settings?"""
    conf = sys.modules.get("django.conf")
    return "django.db" in sys.modules and conf is not None and bool(conf.settings.configured)


def _close_old_connections() -> None:
    """Django's ``close_old_connections()`` for the calling thread's connections; a failure
    is logged, never the job's: the handler's outcome stands."""
    if not configured():
        return
    try:
        sys.modules["django.db"].close_old_connections()
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


@functools.cache
def _close_on_thread_sensitive_thread() -> Callable[[], Awaitable[None]]:
    from asgiref.sync import sync_to_async  # comes with Django

    return sync_to_async(_close_old_connections, thread_sensitive=True)


def around_async(handler: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
    """``handler`` with Django's old connections closed before and after it on asgiref's
    thread-sensitive thread (for a process where ``configured()``)."""
    close = _close_on_thread_sensitive_thread()

    async def recycling(job: Any) -> Any:
        await close()
        try:
            return await handler(job)
        finally:
            await close()

    return recycling
