"""The producer's cost of the peers' bulk enqueue as ``bench/e2e_bench.py`` times it: 20,000
jobs in ``insert_many`` calls of 1,000 (``returning="ids"``), in a fresh process, so the
first call's costs (prepared statements, first shapes, imports done lazily) are counted.

    python bench/cold_bulk_cpu.py [--reps 1] [--dsn postgresql://postgres@127.0.0.1:55432]

Prints one JSON line: the first rep's producer CPU (``process_time``) and wall time, and the
best and median of all reps. CPU moves far less with the machine's other load than jobs/s
do, so run it for two trees in turn (``PYTHONPATH=TREE/src``) to compare them. It drops and
creates the database ``cold_bulk_cpu``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

import attrs
import psycopg

import awa

JOBS, CHUNK = 20_000, 1_000
DATABASE = "cold_bulk_cpu"


@attrs.define
class BenchArgs:
    seq: int
    ts: float


async def measure(dsn: str, reps: int) -> dict[str, float]:
    with psycopg.connect(f"{dsn}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    client = awa.AsyncClient(f"{dsn}/{DATABASE}")
    await client.migrate()
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(reps):
        payloads = [{"seq": i, "ts": time.time()} for i in range(JOBS)]
        cpu_at, wall_at = time.process_time(), time.perf_counter()
        for start in range(0, JOBS, CHUNK):
            chunk = payloads[start : start + CHUNK]
            specs = [awa.InsertSpec(args=BenchArgs(**p), queue="q") for p in chunk]
            await client.insert_many(specs, returning="ids")
        cpu.append(time.process_time() - cpu_at)
        wall.append(time.perf_counter() - wall_at)
    await client.close()
    return {
        "cpu_first_s": cpu[0],
        "wall_first_s": wall[0],
        "cpu_min_s": min(cpu),
        "cpu_median_s": statistics.median(cpu),
        "wall_median_s": statistics.median(wall),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:55432")
    args = parser.parse_args()
    result = asyncio.run(measure(args.dsn, args.reps))
    print(json.dumps({"awa": str(Path(awa.__file__).parent), **result}))


if __name__ == "__main__":
    main()
