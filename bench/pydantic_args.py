"""What pydantic args cost the producer and the worker: ``dump_args`` (what every insert path
calls) and ``load_args`` (what the worker calls) of 10,000 small models, and the client's whole
request making (``insert_many``'s, no store) of the same, best of several runs; with ``--url``,
also ``insert_many`` into that store (1,000 jobs a call, ids returned), jobs/s.

    python bench/pydantic_args.py [--jobs 10000] [--runs 7] [--url postgresql://...]

CPU time (``process_time``) per job, in microseconds: on a machine other processes share it
moves far less than wall time does. The store's figure is wall time: it includes the database.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from decimal import Decimal

import pydantic

import awa
from awa.adapters.memory import MemoryStore
from awa.runtime.serialization import dump_args, load_args


class Flat(pydantic.BaseModel):
    seq: int
    customer: str


class Rich(pydantic.BaseModel):
    user_id: int
    at: datetime
    amount: Decimal
    ref: uuid.UUID
    lines: list[Flat]


def best_us_per_job(run: Callable[[], object], jobs: int, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best / jobs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--url", help="a store to insert into as well (migrated here)")
    a = parser.parse_args()
    at = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    models: dict[str, list[pydantic.BaseModel]] = {
        "flat (2 fields)": [Flat(seq=i, customer="ada") for i in range(a.jobs)],
        "rich (datetime, Decimal, UUID, 2 nested models)": [
            Rich(
                user_id=i,
                at=at,
                amount=Decimal("12.50"),
                ref=uuid.UUID(int=i),
                lines=[Flat(seq=1, customer="a"), Flat(seq=2, customer="b")],
            )
            for i in range(a.jobs)
        ],
    }
    client = awa.Client(store=MemoryStore())
    store = awa.Client(a.url) if a.url else None
    if store is not None:
        store.migrate()
    print(
        "| args | dump_args us/job | load_args us/job | insert_many's requests us/job |"
        + (" insert_many into the store, jobs/s |" if store else "")
    )
    print("|---|---:|---:|---:|" + ("---:|" if store else ""))
    for name, batch in models.items():
        cls = type(batch[0])
        dumped = [dump_args(m) for m in batch]
        dump = best_us_per_job(lambda b=batch: [dump_args(m) for m in b], a.jobs, a.runs)
        load = best_us_per_job(lambda d=dumped, c=cls: [load_args(x, c) for x in d], a.jobs, a.runs)
        requests = best_us_per_job(
            lambda b=batch: [
                client._requests.new_jobs(b[i : i + 1000]) for i in range(0, len(b), 1000)
            ],
            a.jobs,
            a.runs,
        )
        line = f"| {name} | {dump:.2f} | {load:.2f} | {requests:.2f} |"
        if store is not None:
            line += f" {a.jobs / best_wall_s(lambda b=batch: insert(store, b), a.runs):,.0f} |"
        print(line)
    if store is not None:
        store.close()


def insert(client: awa.Client, batch: list[pydantic.BaseModel]) -> None:
    for start in range(0, len(batch), 1000):
        client.insert_many(batch[start : start + 1000], returning="ids")


def best_wall_s(run: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


if __name__ == "__main__":
    main()
