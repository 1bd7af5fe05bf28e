"""Applications for tests/cli/test_worker.py's ``awa worker`` runs, on the in-memory store.

* ``client``: an ``AsyncClient`` with one task on queue ``email``;
* ``sync_client``: a ``Client`` with one sync task on queue ``email``;
* ``hanging``: a function returning a client whose one job hangs until cancelled (it writes
  ``started`` to ``$AWA_TEST_SIGNAL_FILE`` when it starts);
* ``empty``: a client with no task;
* ``not_a_client``: a string.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

import awa


@dataclass
class Email:
    to: str


client = awa.AsyncClient("memory://")


@client.task(Email, queue="email")
async def send(job: awa.Job[Email]) -> None:
    return None


sync_client = awa.Client("memory://")


@sync_client.task(Email, queue="email")
def send_sync(job: awa.SyncJob[Email]) -> None:
    return None


def hanging() -> awa.AsyncClient:
    made = awa.AsyncClient("memory://")

    @made.task(Email, queue="email")
    async def hang(job: awa.Job[Email]) -> None:
        Path(os.environ["AWA_TEST_SIGNAL_FILE"]).write_text("started")
        await asyncio.Event().wait()

    made.store.insert([awa.NewJob(kind="email", queue="email", args={"to": "a@b.c"})])
    return made


empty = awa.AsyncClient("memory://")
not_a_client = "postgresql://not/a/client"
