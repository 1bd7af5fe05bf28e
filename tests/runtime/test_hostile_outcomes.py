"""One bad outcome spoils nothing but its own attempt.

Twenty innocent jobs finish beside one job whose handler ends badly (a NUL or a lone
surrogate in its exception text, an unstorable ``Cancel`` reason, a delay that overflows a
datetime, ...). The innocent ones complete; the bad one fails with its own error; on both
stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

import awa
from awa.domain import ValidationError
from awa.ports import ClaimStore, Finish, PartlyWritten, WriteResult
from awa.runtime.observe import AttemptEnd, Ending, Observer
from awa.runtime.service_failures import ERROR_BACKOFF_S

from .conftest import Backend, reaches, run

S = awa.JobState
INNOCENT = 20


@dataclass
class Row:
    n: int
    bad: bool = False


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def _raise(exc: BaseException) -> Callable[[], object]:
    def act() -> object:
        raise exc

    return act


BAD_OUTCOMES: dict[str, tuple[Callable[[], object], str]] = {
    "nul in the exception text": (
        _raise(ValueError("bad record b'\x00'")),
        "ValueError: bad record b'\\x00'",
    ),
    "lone surrogate in the exception text": (
        _raise(FileNotFoundError("no such file: caf\udce9.txt")),
        "FileNotFoundError: no such file: caf\\udce9.txt",
    ),
    "nul in a Cancel reason": (
        lambda: awa.Cancel("give up\x00"),
        "ValidationError: Cancel reason contains a NUL character",
    ),
    "Snooze beyond any date": (
        lambda: awa.Snooze(1e12),
        "ValidationError: Snooze seconds must be >= 0 and at most",
    ),
    "RetryAfter beyond any date": (
        lambda: awa.RetryAfter(1e12),
        "ValidationError: RetryAfter seconds must be >= 0 and at most",
    ),
    "an exception whose str() raises": (
        _raise(_Unprintable()),
        "_Unprintable: <str() failed: RuntimeError>",
    ),
    "a megabyte of exception text": (
        _raise(ValueError("x" * 1_000_000)),
        "ValueError: xxxxxxxx",
    ),
}


async def _story(
    client: awa.AsyncClient, bad_outcome: Callable[[], object]
) -> tuple[list[awa.JobRecord], awa.JobRecord]:
    """Start all 21 handlers, then let them end together so their outcomes share a batch."""
    started = 0
    all_started = asyncio.Event()

    @client.task(Row)
    async def handle(job: awa.Job[Row]) -> object:
        nonlocal started
        started += 1
        if started == INNOCENT + 1:
            all_started.set()
        await all_started.wait()
        return bad_outcome() if job.args.bad else None

    innocent = await client.insert_many(
        [awa.InsertSpec(args=Row(n), max_attempts=1) for n in range(INNOCENT)]
    )
    bad = await client.insert(Row(99, bad=True), max_attempts=1)
    await client.start([("default", INNOCENT + 1)])
    done = [await reaches(client, job.id, S.COMPLETED) for job in innocent]
    failed = await reaches(client, bad.id, S.FAILED)
    await client.shutdown()
    return done, failed


@pytest.mark.parametrize("case", list(BAD_OUTCOMES))
def test_one_bad_outcome_fails_only_its_own_job(backend: Backend, case: str) -> None:
    bad_outcome, expected_error = BAD_OUTCOMES[case]

    async def story() -> None:
        _, _, [client] = backend.clients()
        done, failed = await _story(client, bad_outcome)
        assert len(done) == INNOCENT
        assert all(job.errors == () for job in done)
        [error] = failed.errors
        assert error.error.startswith(expected_error)
        assert len(error.error) <= 10_000

    run(story)


class _RefusesOneLease:
    """A store that refuses, as bad input, every finish batch holding one chosen job: what a
    store does with an outcome it cannot hold that no check caught first."""

    def __init__(self, store: ClaimStore, refused_job_id: int) -> None:
        self._store = store
        self.refused_job_id = refused_job_id
        self.batches: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        self.batches.append(len(finishes))
        for finish in finishes:
            if finish.lease.job_id == self.refused_job_id and isinstance(
                finish.outcome, awa.domain.Complete
            ):
                raise ValidationError("the store cannot hold this outcome")
        return self._store.finish(finishes)


def test_a_batch_the_store_refuses_is_split_until_the_bad_outcome_stands_alone(
    backend: Backend,
) -> None:
    async def story() -> None:
        clock, store, _ = backend.clients()
        refusing = _RefusesOneLease(store, refused_job_id=INNOCENT + 1)
        client = awa.AsyncClient(store=refusing, clock=clock)  # type: ignore[arg-type]
        before = clock.now()
        done, failed = await _story(client, lambda: None)
        assert clock.now() == before  # no retry timer, no rescue: split and written at once
        assert len(done) == INNOCENT
        [error] = failed.errors
        assert error.error == ("outcome could not be stored: the store cannot hold this outcome")
        # the first batch held all 21; halving finds the bad one in a few more writes, and
        # its failure is the one write after that
        assert refusing.batches[0] == INNOCENT + 1
        assert len(refusing.batches) <= 2 * 5 + 2

    run(story)


def test_floats_in_args_come_back_as_floats(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        values = {"big": 1e20, "huge": -1.5e300, "small": 1e-7, "whole": 3.0, "int": 10**20}
        job = await client.insert(values, kind="numbers")
        stored = (await client.get_job(job.id)).args
        assert stored == values
        assert [type(stored[k]) for k in values] == [float, float, float, float, int]

    run(story)


def test_no_attempt_is_lost_when_an_outcome_cannot_be_stored_at_all(backend: Backend) -> None:
    """Even the failure that replaces a refused outcome is refused: the attempt is left to
    maintenance (rescued as a stale heartbeat), and the worker goes on with the others."""

    class RefusesEveryFinishOfOneJob(_RefusesOneLease):
        def finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
            if any(f.lease.job_id == self.refused_job_id for f in finishes):
                raise ValidationError("nothing for this job can be stored")
            return self._store.finish(finishes)

    async def story() -> None:
        clock, store, _ = backend.clients()
        refusing = RefusesEveryFinishOfOneJob(store, refused_job_id=INNOCENT + 1)
        client = awa.AsyncClient(store=refusing, clock=clock)  # type: ignore[arg-type]

        @client.task(Row)
        async def handle(job: awa.Job[Row]) -> None:
            return None

        jobs = await client.insert_many(
            [awa.InsertSpec(args=Row(n), max_attempts=1) for n in range(INNOCENT + 1)]
        )
        await client.start([("default", 5)], heartbeat_staleness=90, heartbeat_interval=30)
        for job in jobs[:INNOCENT]:
            await reaches(client, job.id, S.COMPLETED)
        assert (await client.get_job(jobs[-1].id)).state is S.RUNNING
        await client.shutdown(timeout=0)
        clock.advance(91)
        rescued = store.rescue(staleness_s=90)
        assert [r.job.id for r in rescued] == [jobs[-1].id]

    run(story)


class _HoldsOneRowOnce(_RefusesOneLease):
    """A store whose first finish batch holding the chosen job writes every other outcome and
    not that one (``PartlyWritten``), as PostgreSQL does while another session holds the job's
    row past ``held_row_wait_s``; later batches are written whole."""

    def __init__(self, store: ClaimStore, refused_job_id: int) -> None:
        super().__init__(store, refused_job_id)
        self.held = True

    def finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        self.batches.append(len(finishes))
        if not self.held or all(f.lease.job_id != self.refused_job_id for f in finishes):
            return self._store.finish(finishes)
        self.held = False
        others = [f for f in finishes if f.lease.job_id != self.refused_job_id]
        written = iter(self._store.finish(others))
        results = [
            None if f.lease.job_id == self.refused_job_id else next(written) for f in finishes
        ]
        raise PartlyWritten("1 row held", results)


class _Endings(Observer):
    def __init__(self) -> None:
        self.endings: list[Ending] = []

    def attempt_ended(self, end: AttemptEnd) -> None:
        self.endings.append(end.ending)


def test_an_outcome_whose_row_was_held_is_written_again_alone(backend: Backend) -> None:
    """The others in its batch were written: they are counted and reported completed once, and
    only the held one goes back, written when the completion service runs again after its
    error backoff (a retry of the whole batch would find the others finished and report them
    stale)."""

    async def story() -> None:
        clock, store, _ = backend.clients()
        holding = _HoldsOneRowOnce(store, refused_job_id=INNOCENT + 1)
        client = awa.AsyncClient(store=holding, clock=clock)  # type: ignore[arg-type]
        endings = _Endings()
        started: list[int] = []
        all_started = asyncio.Event()

        @client.task(Row)
        async def handle(job: awa.Job[Row]) -> None:
            started.append(job.id)
            if len(started) == INNOCENT + 1:
                all_started.set()
            await all_started.wait()  # all end together: their outcomes share a batch

        jobs = await client.insert_many([awa.InsertSpec(args=Row(n)) for n in range(INNOCENT + 1)])
        await client.start([("default", INNOCENT + 1)], observers=[endings])
        for job in jobs[:INNOCENT]:
            await reaches(client, job.id, S.COMPLETED)
        assert (await client.get_job(jobs[-1].id)).state is S.RUNNING
        assert endings.endings == [Ending.COMPLETED] * INNOCENT
        clock.advance(ERROR_BACKOFF_S)
        await reaches(client, jobs[-1].id, S.COMPLETED)
        assert holding.batches == [INNOCENT + 1, 1]  # then the held outcome, alone
        assert endings.endings == [Ending.COMPLETED] * (INNOCENT + 1)
        assert client.runtime.stats.stale_finishes == 0  # type: ignore[union-attr]
        await client.shutdown()

    run(story)
