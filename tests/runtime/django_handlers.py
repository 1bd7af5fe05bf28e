"""A process for tests/runtime/test_django_connections.py (Django's settings are process-wide,
so each case gets a process of its own): ``python tests/runtime/django_handlers.py CASE``.

Two jobs run one after the other through ``awa.testing.TestClient`` (the real worker code, on
one handler thread). Each handler notes whether its thread still held a Django connection
when it began, then queries, which opens one. The process prints one JSON line:
``{"held": [...], "threads": n, "states": [...], "django_imported": bool}``.

Cases: ``sync`` and ``async`` (through ``sync_to_async``) with ``CONN_MAX_AGE`` 0;
``sync-persistent`` (``CONN_MAX_AGE`` None); ``close-fails`` (closing a connection
raises); ``unconfigured`` (``django.db`` imported, no settings, the
handler leaves Django alone); ``no-django`` (Django never imported).

``busy-thread`` is a worker instead: one async handler holds asgiref's thread-sensitive
thread (a ``sync_to_async`` call) while another async job, which never touches the database,
runs; it prints ``{"completed_meanwhile": bool}``.

``test-transaction`` is a Django test case's async test: inside the test's ``atomic()`` block,
``async_to_sync`` runs a ``TestClient`` whose async handler queries through ``sync_to_async``
(so on the test's own thread); it prints ``{"states": [...], "transaction_intact": bool}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import awa
from awa.testing import TestClient

#: a bound on every wait, far beyond what a loaded machine needs
WAIT_S = 20.0


@dataclass
class Note:
    n: int


def configure(conn_max_age: int | None) -> None:
    import django
    from django.conf import settings

    name = Path(tempfile.mkdtemp(prefix="awa-django-")) / "db.sqlite3"
    settings.configure(
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": str(name),
                "CONN_MAX_AGE": conn_max_age,
            }
        },
        USE_TZ=True,
    )
    django.setup()


async def main(case: str) -> dict[str, Any]:
    held: list[bool] = []
    threads: set[str] = set()

    def note() -> None:
        from django.db import connection

        threads.add(threading.current_thread().name)
        held.append(connection.connection is not None)
        with connection.cursor() as cur:
            cur.execute("SELECT 1")

    if case == "no-django":
        pass
    elif case == "unconfigured":
        import django.db  # noqa: F401  (imported, never configured)
    else:
        configure(None if case == "sync-persistent" else 0)
    if case == "close-fails":
        from django.db.backends.base.base import BaseDatabaseWrapper

        def refuse(self: object) -> None:
            raise RuntimeError("the database went away")

        BaseDatabaseWrapper.close_if_unusable_or_obsolete = refuse  # type: ignore[method-assign]

    tc = TestClient()
    if case == "async":
        from asgiref.sync import sync_to_async

        @tc.task(Note, kind="note")
        async def note_async(job: awa.Job[Note]) -> None:
            await sync_to_async(note)()

    elif case in ("no-django", "unconfigured"):

        @tc.task(Note, kind="note")
        def plain(job: awa.SyncJob[Note]) -> None:
            threads.add(threading.current_thread().name)

        @tc.task(Note, kind="plain_async")
        async def plain_async(job: awa.Job[Note]) -> None:
            await asyncio.sleep(0)

        await tc.insert(Note(0), kind="plain_async")
    else:

        @tc.task(Note, kind="note")
        def note_sync(job: awa.SyncJob[Note]) -> None:
            note()

    for n in range(2):
        await tc.insert(Note(n), kind="note")
    results = await tc.work_all()
    return {
        "held": held,
        "threads": len(threads),
        "states": [result.state.value for result in results],
        "django_imported": "django" in sys.modules,
    }


async def busy_thread() -> dict[str, Any]:
    configure(0)
    from asgiref.sync import sync_to_async

    loop = asyncio.get_running_loop()
    holding, release, released = asyncio.Event(), threading.Event(), threading.Event()
    client = awa.AsyncClient(store=awa.MemoryStore())

    def hold() -> None:
        loop.call_soon_threadsafe(holding.set)
        release.wait(2 * WAIT_S)  # past the test's own wait, so that it cannot end first
        released.set()

    @client.task(Note, kind="hold")
    async def hold_thread(job: awa.Job[Note]) -> None:
        await sync_to_async(hold)()

    @client.task(Note, kind="note")
    async def quick(job: awa.Job[Note]) -> None:
        pass

    await client.start([("default", 2)], poll_interval=0.01)
    try:
        await client.insert(Note(0), kind="hold")
        await asyncio.wait_for(holding.wait(), WAIT_S)
        job = await client.insert(Note(1), kind="note")
        give_up = loop.time() + WAIT_S
        while (await client.get_job(job.id)).state is not awa.JobState.COMPLETED:
            if loop.time() > give_up:
                return {"completed_meanwhile": False}
            await asyncio.sleep(0.01)  # the poll period, not a synchronisation
        return {"completed_meanwhile": not released.is_set()}
    finally:
        release.set()
        await client.shutdown(timeout=WAIT_S)


def test_transaction() -> dict[str, Any]:
    configure(0)
    from asgiref.sync import async_to_sync, sync_to_async
    from django.db import connection, transaction

    def query() -> None:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")

    tc = TestClient()

    @tc.task(Note, kind="note")
    async def note_async(job: awa.Job[Note]) -> None:
        await sync_to_async(query)()

    async def test_body() -> list[str]:
        await tc.insert(Note(0), kind="note")
        results = await tc.work_all()
        await sync_to_async(query)()  # after the close the job's end queued on this thread
        return [result.state.value for result in results]

    with transaction.atomic():  # what a Django TestCase holds around each test
        query()
        states = async_to_sync(test_body)()
        try:
            query()
        except Exception as exc:
            return {"states": states, "transaction_intact": False, "error": repr(exc)}
        return {"states": states, "transaction_intact": connection.in_atomic_block}


if __name__ == "__main__":
    case = sys.argv[1]
    if case == "busy-thread":
        print(json.dumps(asyncio.run(busy_thread())))
    elif case == "test-transaction":
        print(json.dumps(test_transaction()))
    else:
        print(json.dumps(asyncio.run(main(case))))
