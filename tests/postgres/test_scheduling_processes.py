"""Unique keys and periodic fires under real concurrency on PostgreSQL: eight processes racing
for one key, two workers firing an every-second schedule while the leader is SIGKILLed, two
leaders firing one plan at once, and a retry whose key a concurrent insert took after the
check (the index refuses it and the verb runs again).

Waits are on conditions in the database or a process, with a bound (never a fixed sleep).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.postgres.test_real_processes as real_processes
from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.adapters.postgres.transaction import PgTransaction as _PgTransaction
from awa.domain import Fail, JobState, NewJob, Schedule, Unique, UniqueConflict
from awa.ports import Finish
from tests.postgres.test_real_processes import ROOT, Workers, wait_for

# the real-process fixtures: a database with a worker_events table, the workers, and a store on
# the database's clock
url = real_processes.url
workers = real_processes.workers
store = real_processes.store

INSERTER = Path(__file__).with_name("unique_inserter.py")
PRODUCERS = 8
INSERTS_EACH = 1000


def test_eight_processes_inserting_one_unique_job_at_once_make_one_job(url: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [
        subprocess.Popen(
            [sys.executable, str(INSERTER), url, str(INSERTS_EACH)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for _ in range(PRODUCERS)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready", proc.stderr
        for proc in procs:  # the starting gun: every producer inserts at once
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert sum(r["inserted"] for r in results) == 1
    assert sum(r["conflicts"] for r in results) == PRODUCERS * INSERTS_EACH - 1
    with psycopg.connect(url) as conn:
        [(count, keys)] = conn.execute(
            "SELECT count(*), count(DISTINCT unique_key) FROM awa.jobs"
        ).fetchall()
    assert (count, keys) == (1, 1)


def _fire_times(url: str) -> list[datetime]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT (metadata->>'periodic_fire_at')::timestamptz FROM awa.jobs"
            " WHERE metadata->>'periodic_name' = 'periodic' ORDER BY 1"
        ).fetchall()
    return [row[0] for row in rows]


def _now(url: str) -> datetime:
    with psycopg.connect(url) as conn:
        [(now,)] = conn.execute("SELECT now()").fetchall()
    return now  # type: ignore[no-any-return]


def test_an_every_second_schedule_fires_each_second_once_across_a_leader_kill(
    url: str, store: PostgresStore, workers: Workers
) -> None:
    for name in ("first", "second"):
        workers.start(name, "nap", "--periodic", "* * * * * *", "--concurrency", "4")
    ready = wait_for(lambda: len(r := [*_events_ready(url)]) == 2 and r, "both ready", workers)
    owners = {name: json.loads(detail)["owner"] for name, detail in ready}
    leader = wait_for(store.leader, "a maintenance leader", workers)
    [dead] = [name for name, owner in owners.items() if owner == leader]
    [alive] = [name for name in owners if name != dead]
    wait_for(lambda: len(_fire_times(url)) >= 4, "four fires from the first leader", workers)
    workers.kill(dead)  # SIGKILL mid-run: its leadership lapses after 1.5 s
    killed_at = _now(url)
    wait_for(lambda: store.leader() == owners[alive], "the survivor leads", workers)
    later = killed_at + timedelta(seconds=5)
    wait_for(lambda: _fire_times(url)[-1] >= later, "five more seconds of fires", workers)
    assert workers.stop(alive) == 0
    fires = _fire_times(url)
    assert len(fires) == len(set(fires)), f"a second was fired twice: {fires}"
    steps = [(b - a).total_seconds() for a, b in itertools.pairwise(fires)]
    gaps = [s for s in steps if s != 1.0]
    # one job per second, except the failover, which coalesces what it missed into one fire
    assert len(gaps) <= 1, f"fires are not one a second outside the failover: {fires}"
    assert all(gap < 5.0 for gap in gaps), f"the failover took too long: {fires}"
    before = [f for f in fires if f <= killed_at]
    after = [f for f in fires if f > killed_at + timedelta(seconds=3)]
    assert len(before) >= 4
    assert len(after) >= 2
    assert all(f.microsecond == 0 for f in fires)


def _events_ready(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT worker, detail FROM worker_events WHERE event = 'ready' ORDER BY at"
        ).fetchall()
    return [(w, d) for w, d in rows]


def test_two_leaders_firing_one_plan_at_once_enqueue_it_once(
    pg_pool: ConnectionPool[Any],
) -> None:
    from tests.pg_fixtures import truncate

    truncate(pg_pool)
    clock = ManualClock()
    leaders = [PostgresStore(pg_pool, clock=clock) for _ in range(2)]
    leaders[0].register_schedules(
        [Schedule(name="tick", cron="* * * * * *", job=NewJob(kind="tick"))]
    )
    for _ in range(20):
        clock.advance(1)
        [plan] = leaders[0].plan_fires().plans
        barrier = threading.Barrier(2)
        answers: list[Any] = []

        def fire(
            leader: PostgresStore,
            barrier: threading.Barrier = barrier,
            answers: list[Any] = answers,
            plan: Any = plan,
        ) -> None:
            barrier.wait()
            answers.append(leader.fire(plan))

        threads = [threading.Thread(target=fire, args=(leader,)) for leader in leaders]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(a is None for a in answers) == [False, True]
    assert len(leaders[0].list_jobs(kind="tick", limit=100)) == 20


def test_a_key_taken_after_the_check_is_refused_by_the_index_and_the_retry_runs_again(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = NewJob(kind="report", args={"day": 7}, unique=Unique())
    [first] = store.insert([job])
    [claimed] = store.claim("default", limit=1)
    store.finish([Finish(claimed.lease, Fail("x", terminal=True))])  # failed: the key is free
    [holder] = store.insert([job])
    checks: list[str] = []
    real_check = _PgTransaction.lock_unique_holder

    def late_check(self: _PgTransaction, key: str) -> Any:
        checks.append(key)
        if len(checks) == 1:  # as if the holder committed just after this check
            return None
        return real_check(self, key)

    monkeypatch.setattr(_PgTransaction, "lock_unique_holder", late_check)
    with pytest.raises(UniqueConflict) as raised:
        store.retry(first.id)
    assert raised.value.job_id == holder.id
    assert len(checks) == 2, "the index refused the write, and the retry ran again"
    assert store.get_job(first.id).state is JobState.FAILED


def test_a_registration_racing_another_does_not_move_a_fired_schedule_back(
    pg_pool: ConnectionPool[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.pg_fixtures import truncate

    truncate(pg_pool)
    clock = ManualClock()
    first = PostgresStore(pg_pool, clock=clock)
    tick = Schedule(name="tick", cron="* * * * * *", job=NewJob(kind="tick"))
    first.register_schedules([tick])
    clock.advance(1)
    first.fire(first.plan_fires().plans[0])  # the leader fired: next fire moved on
    [fired] = first.list_schedules()
    # a second process whose transaction looked before the first one's row existed
    monkeypatch.setattr(_PgTransaction, "lock_schedules", lambda self, names: {})
    PostgresStore(pg_pool, clock=clock).register_schedules([tick])
    assert first.list_schedules() == [fired]
    assert first.plan_fires().plans == []  # nothing to fire twice
