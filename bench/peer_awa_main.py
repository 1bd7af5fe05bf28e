"""This repository's awa as one more peer of ``shared/bench/peers``: the peers' driver
(``common.py``, imported from that folder, not copied) runs it through the same commands and
prints the same JSON lines.

    python bench/peer_awa_main.py setup|enqueue|drain|lat-worker|lat-produce [options]

(``bench/e2e_bench.py`` runs the whole matrix, each measurement in a fresh process against a
fresh database.) API choices, as a user would write them:

  args:        a dataclass ``BenchArgs(seq, ts)``, registered with ``client.task(BenchArgs)``
  one-by-one:  ``await client.insert(BenchArgs(...), queue=q)`` (one statement, autocommit)
  bulk:        ``await client.insert_many([InsertSpec(args=..., queue=q), ...], returning="ids")``,
               1,000 a call (pgqueuer's bulk enqueue, too, returns the ids)
  worker:      ``await client.start([(q, conc)])``; ``default`` = ``QueueConfig(queue=q)``, i.e.
               the library's default concurrency and every other setting at its default
  completion:  DB-confirmed: ``count(*) WHERE queue = q AND state = 'completed'`` reaches n
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

import awa
from awa.runtime.config import QueueConfig

PEERS_DIR = Path(
    os.environ.get(
        "PEERBENCH_DIR", Path(__file__).resolve().parents[2] / "shared" / "bench" / "peers"
    )
)
sys.path.insert(0, str(PEERS_DIR))
import common  # noqa: E402  (the peers' shared driver)

DB = os.environ.get("AWA_BENCH_DB", "awa_main_bench")


@dataclasses.dataclass
class BenchArgs:
    seq: int
    ts: float


def _revision() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


class AwaMainPeer:
    name = "awa-main"

    def version(self) -> str:
        from importlib.metadata import version

        return f"{version('awa')}+{_revision()}"

    async def open(self) -> None:
        self.client = awa.AsyncClient(common.dsn(DB))
        self.admin = await psycopg.AsyncConnection.connect(common.dsn(DB), autocommit=True)
        self.started = False

    async def close(self) -> None:
        await self.stop_worker()
        await self.admin.close()
        close = getattr(self.client.store, "close", None)
        if close is not None:
            close()

    async def setup(self) -> None:
        await self.client.migrate()

    async def reset(self) -> None:
        await self.admin.execute(
            "TRUNCATE awa.jobs, awa.dlq, awa.queues, awa.schedules RESTART IDENTITY"
        )

    async def enqueue_one(self, queue: str, payloads: list[dict[str, Any]]) -> None:
        insert = self.client.insert
        for p in payloads:
            await insert(BenchArgs(**p), queue=queue)

    async def enqueue_bulk(self, queue: str, payloads: list[dict[str, Any]]) -> None:
        for chunk in common.chunks(payloads, common.BULK_CHUNK):
            await self.client.insert_many(
                [awa.InsertSpec(args=BenchArgs(**p), queue=queue) for p in chunk],
                returning="ids",  # what the peers' bulk enqueue returns
            )

    async def start_worker(self, queue: str, conc: Any, handler: Any) -> None:
        async def run(job: awa.Job[BenchArgs]) -> None:
            await handler({"seq": job.args.seq, "ts": job.args.ts})

        self.client.task(BenchArgs, queue=queue)(run)
        spec = QueueConfig(queue=queue) if conc == "default" else (queue, int(conc))
        await self.client.start([spec])
        self.started = True

    async def stop_worker(self) -> None:
        if self.started:
            self.started = False
            await self.client.shutdown(timeout=30)

    async def all_done(self, queue: str, n: int) -> bool:
        cur = await self.admin.execute(
            "SELECT count(*) FROM awa.jobs WHERE queue = %s AND state = 'completed'", (queue,)
        )
        row = await cur.fetchone()
        return row is not None and row[0] >= n


if __name__ == "__main__":
    common.main(AwaMainPeer)
