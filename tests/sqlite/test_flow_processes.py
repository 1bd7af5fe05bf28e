"""A queue's concurrency limit holds across real processes on one SQLite file.

Four processes (``flow_claimer.py``) claim from one queue with ``concurrency_limit=2``. Each
round some of them finish what they hold, then all four are told to claim at once, so their
``BEGIN IMMEDIATE`` transactions race for the file's write lock. A trigger the test adds to
the file samples, inside every transaction that makes an attempt live, how many attempts of
the queue are live: an observer that is not the store's code and sees every claim's commit,
whichever process made it. The same run without the limit shows the probe catches a breach.
"""

from __future__ import annotations

import os
import random
import select
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path

import pytest

from awa.adapters.sqlite import SqliteStore
from awa.domain import JobState, NewJob

CLAIMER = Path(__file__).with_name("flow_claimer.py")
ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 4
PER_CLAIM = 2
ROUNDS = 40
QUEUE = "api"
WAIT_S = 60.0

# one row per attempt made live, with the queue's live count as that transaction sees it
PROBE = """
CREATE TABLE probe_live (id INTEGER PRIMARY KEY AUTOINCREMENT, job_id INTEGER, live INTEGER);
CREATE TRIGGER probe_live_on_claim AFTER UPDATE OF state ON awa_jobs
WHEN new.queue = 'api' AND new.state IN ('running', 'waiting_external')
     AND old.state NOT IN ('running', 'waiting_external')
BEGIN
    INSERT INTO probe_live (job_id, live)
    SELECT new.id, count(*) FROM awa_jobs
    WHERE queue = new.queue AND state IN ('running', 'waiting_external');
END;
"""


class Claimers:
    """The claiming processes, each a pipe in and a pipe out; ``options`` go to each one's
    command line (``flow_claimer.py``)."""

    def __init__(self, path: Path, options: Sequence[str] = ()) -> None:
        self.procs = [
            subprocess.Popen(
                [sys.executable, str(CLAIMER), str(path), QUEUE, *options],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=(path.parent / f"claimer-{n}.err").open("w"),
                text=True,
                bufsize=1,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            )
            for n in range(PROCESSES)
        ]
        self.folder = path.parent

    def tell(self, which: list[int], command: str) -> list[list[str]]:
        """Send ``command`` to every process of ``which`` before reading any answer, so their
        work overlaps; their answers' words, in ``which``'s order."""
        for n in which:
            stdin = self.procs[n].stdin
            assert stdin is not None
            stdin.write(command + "\n")
            stdin.flush()
        return [self._answer(n) for n in which]

    def _answer(self, n: int) -> list[str]:
        stdout = self.procs[n].stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], WAIT_S)
        line = stdout.readline() if ready else ""
        if not line:
            errors = (self.folder / f"claimer-{n}.err").read_text()
            raise AssertionError(f"claimer {n} gave no answer within {WAIT_S}s\n{errors}")
        return line.split()

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None and proc.stdin is not None:
                proc.stdin.write("quit\n")
                proc.stdin.close()
        for proc in self.procs:
            try:
                proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.db"
    with SqliteStore(str(path)) as store:
        store.insert([NewJob(kind="k", queue=QUEUE) for _ in range(PROCESSES * PER_CLAIM * ROUNDS)])
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(PROBE)
    return path


@pytest.fixture
def claimers(db: Path) -> Iterator[Claimers]:
    started = Claimers(db)
    yield started
    started.close()


def _rounds(claimers: Claimers, limit: int | None) -> tuple[list[int], Counter[int]]:
    """Run the rounds; the live count after each, and how many jobs each process claimed."""
    rng = random.Random(28)
    held = [0] * PROCESSES
    after_rounds, claimed_by = [], Counter[int]()
    for _ in range(ROUNDS):
        finishing = [n for n in range(PROCESSES) if held[n] and rng.random() < 0.5]
        for n, answer in zip(finishing, claimers.tell(finishing, "finish"), strict=True):
            assert answer == ["finished", str(held[n])]
            held[n] = 0
        order = rng.sample(range(PROCESSES), PROCESSES)  # who is told first varies
        for n, answer in zip(order, claimers.tell(order, f"claim {PER_CLAIM}"), strict=True):
            got = len(answer) - 1
            held[n] += got
            claimed_by[n] += got
        after_rounds.append(sum(held))
        if limit is not None:
            # never above the limit, and every free slot taken (four claims asked for more)
            assert sum(held) == limit, (after_rounds, held)
    return after_rounds, claimed_by


def _probe(db: Path) -> list[int]:
    with closing(sqlite3.connect(db)) as conn:
        return [live for (live,) in conn.execute("SELECT live FROM probe_live ORDER BY id")]


def test_four_processes_never_hold_more_live_attempts_than_the_queues_limit(
    db: Path, claimers: Claimers
) -> None:
    with SqliteStore(str(db)) as store:
        store.configure_queue(QUEUE, concurrency_limit=2)
    after_rounds, claimed_by = _rounds(claimers, limit=2)
    samples = _probe(db)
    assert max(samples) == 2, samples  # sampled inside every claim that made an attempt live
    assert len(samples) == sum(claimed_by.values())  # one sample per attempt made live
    with SqliteStore(str(db)) as store:
        assert store.count_jobs(state=JobState.RUNNING, queue=QUEUE) == after_rounds[-1] == 2


def test_without_the_limit_the_same_rounds_go_past_it_so_the_probe_can_fail(
    db: Path, claimers: Claimers
) -> None:
    after_rounds, _ = _rounds(claimers, limit=None)
    assert max(_probe(db)) == max(after_rounds) > 2
