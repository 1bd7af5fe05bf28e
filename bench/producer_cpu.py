"""The producer's own CPU per job on the insert path, stage by stage, with no database: what
``insert_many`` does before its first round trip and what the COPY path does per row.

    python bench/producer_cpu.py [--repeats 60]

Each figure is the fastest of ``--repeats`` runs of one call of 1,000 jobs (one job for the
single insert), so other processes on the machine move it little. Workload (the peers'): args
``{seq, ts}`` as a dataclass, ``InsertSpec(args=..., queue="q")``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import timeit
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import awa
from awa.adapters.postgres.inserts.copy_encoding import copy_text
from awa.adapters.postgres.inserts.encoding import jobs_from_reserved
from awa.client.requests import Requests
from awa.domain.validation import ARGS_BYTES_MAX_DEFAULT
from awa.runtime.registry import TaskRegistry

BATCH = 1_000


@dataclasses.dataclass
class BenchArgs:
    seq: int
    ts: float


def _us_per_job(fn: Callable[[], Any], jobs: int, repeats: int) -> float:
    return min(timeit.repeat(fn, number=1, repeat=repeats)) / jobs * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--repeats", type=int, default=60)
    a = ap.parse_args()
    ops = Requests(TaskRegistry(), ARGS_BYTES_MAX_DEFAULT)
    specs = [awa.InsertSpec(args=BenchArgs(i, time.time()), queue="q") for i in range(BATCH)]
    requests = ops.new_jobs(specs)
    now = datetime.now(timezone.utc)
    ids = [str(i) for i in range(1, BATCH + 1)]
    jobs = jobs_from_reserved(requests, now, ids)
    one = [specs[0]]
    stages: list[tuple[str, Callable[[], Any], int]] = [
        (
            "the caller's InsertSpec and args",
            lambda: [awa.InsertSpec(args=BenchArgs(i, 1.5), queue="q") for i in range(BATCH)],
            BATCH,
        ),
        ("new_jobs: NewJob values, validated", lambda: ops.new_jobs(specs), BATCH),
        ("the Job values (create_jobs)", lambda: jobs_from_reserved(requests, now, ids), BATCH),
        ("the COPY text", lambda: copy_text(jobs, requests), BATCH),
        ("new_jobs of a single insert", lambda: ops.new_jobs(one), 1),
    ]
    for name, fn, jobs_per_call in stages:
        repeats = a.repeats if jobs_per_call > 1 else a.repeats * 100
        print(f"{name:40s} {_us_per_job(fn, jobs_per_call, repeats):6.2f} us/job")


if __name__ == "__main__":
    main()
