"""``awa.Client``: the async client's surface without ``await``. Workers run on a private
event loop thread; the shared verbs (``sync_verbs.py``, generated) call the store on the
caller's thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from awa.client import producing
from awa.client.async_client import AsyncClient
from awa.client.calls import produces, takes_parameters_of
from awa.client.declarations import Declarations
from awa.client.producing import Batch
from awa.client.store_access import QueueSpec
from awa.client.sync_verbs import Verbs
from awa.domain import Job as JobRecord
from awa.runtime.health import Health
from awa.runtime.runtime import Runtime

__all__ = ["Client"]


class Client(Declarations, Verbs):
    """The same surface without ``await``. Workers run on a private event loop thread; sync
    handlers run in its thread pool and receive ``awa.SyncJob``."""

    @takes_parameters_of(AsyncClient.__init__)  # the same dsn, store, clock, max_args_bytes
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._async = AsyncClient(*args, **kwargs)
        self.store = self._async.store
        self.registry = self._async.registry
        self._requests = self._async._requests
        self._ops = self._async._ops
        self._schedules = self._async._schedules  # one set: start() stores them
        self._bulk = self._async._bulk
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _in_loop(self, coro: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="awa-client-loop", daemon=True
            )
            self._thread.start()
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result()

    def migrate(self) -> None:
        self._ops.migrate()

    insert = produces(
        doc="""Insert one job; with ``conn`` (a psycopg, SQLAlchemy or Django connection or
        session of yours) inside its open transaction; ``unique`` and ``on_conflict`` as
        ``AsyncClient.insert``.""",
    )(producing.insert)
    insert_many = produces(doc="``AsyncClient.insert_many`` on this thread.")(producing.insert_many)

    def _insert_batch(self, batch: Batch[Any], /) -> list[JobRecord] | list[int]:
        items, conn, on_conflict, ids = batch.items, batch.conn, batch.on_conflict, batch.ids
        if conn is None and self._bulk is not None:  # PostgreSQL: the store routes the batch
            chunks = self._requests.new_job_chunks(items)  # made when the store asks
            unique = not self._requests.streamable(items)
            return self._bulk.insert_batch(
                len(items), chunks, unique=unique, on_conflict=on_conflict, ids=ids
            )
        jobs = self._ops.insert(self._requests.new_jobs(items), conn, on_conflict)
        return [job.id for job in jobs] if ids else jobs

    def start(self, queues: Sequence[QueueSpec], **settings: Any) -> None:
        self._in_loop(self._async.start(queues, **settings))

    def shutdown(self, timeout: float = 30.0) -> None:
        if self._loop is None:
            return
        self._in_loop(self._async.shutdown(timeout))
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._loop = None

    def close(self) -> None:
        """Shut workers down and release the database connections this client opened."""
        self.shutdown()
        if self._async._owns_store:
            self._ops.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def runtime(self) -> Runtime | None:
        return self._async.runtime

    @property
    def async_client(self) -> AsyncClient:
        """The ``AsyncClient`` underneath, sharing this client's store and tasks: what
        ``awa worker`` runs on its own event loop when the app names a ``Client``."""
        return self._async

    def health_check(self) -> Health:
        """``AsyncClient.health_check``."""
        result: Health = self._in_loop(self._async.health_check())
        return result
