"""The application ``awa worker`` runs in tests/postgres/test_worker_command.py:
``awa worker tests.postgres.worker_app:client`` with the database in ``AWA_DATABASE_URL``.

One task on queue ``default`` whose args say what to do: ``ok`` completes, ``fail`` raises
``ValueError``, ``hang`` waits until it is cancelled (a shutdown's release).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

import awa

client = awa.AsyncClient(os.environ["AWA_DATABASE_URL"])


@dataclass
class Work:
    mode: str


@client.task(Work, kind="work")
async def work(job: awa.Job[Work]) -> None:
    if job.args.mode == "fail":
        raise ValueError(f"bad row in job {job.id}")
    if job.args.mode == "hang":
        await asyncio.Event().wait()
