"""``awa.testing.TestClient`` as a user writes with it: handlers driven job by job, time moved
by hand, on the memory store and (given a URL) on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import awa
from awa.domain import Complete, Fail, RetryAfter, Snooze
from awa.testing import TestClient, make_job

S = awa.JobState


@awa.job_kind(queue="payments", max_attempts=5)
@dataclass
class Charge:
    customer: str
    cents: int


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.postgres)])
def tc(request: pytest.FixtureRequest) -> Iterator[TestClient]:
    url = request.getfixturevalue("pg_clean_url") if request.param == "postgres" else None
    with TestClient(url) as client:
        yield client


def test_a_handler_that_fails_twice_then_succeeds_completes_without_sleeping(
    tc: TestClient,
) -> None:
    tries: list[int] = []

    @tc.task(Charge)
    async def charge(job: awa.Job[Charge]) -> None:
        tries.append(job.attempt)
        if job.attempt < 3:
            raise ConnectionError(f"card network down (try {job.attempt})")

    async def story() -> None:
        job = await tc.insert(Charge("ada", 1200))
        assert job.queue == "payments"

        first = await tc.work_one()
        assert first is not None
        assert (first.state, first.attempt) == (S.RETRYABLE, 1)
        assert first.error == "ConnectionError: card network down (try 1)"
        assert isinstance(first.outcome, Fail)
        assert await tc.work_one() is None  # the retry is not due yet: time stands still

        tc.advance()  # to the moment the retry is due
        second = await tc.work_one()
        assert second is not None
        assert (second.state, second.attempt) == (S.RETRYABLE, 2)

        tc.advance(3600)
        third = await tc.work_one()
        assert third is not None
        assert (third.state, third.attempt, third.error) == (S.COMPLETED, 3, None)
        assert third.outcome == Complete()
        assert [(e.attempt, e.error) for e in third.errors] == [
            (1, "ConnectionError: card network down (try 1)"),
            (2, "ConnectionError: card network down (try 2)"),
        ]
        assert (await tc.get_job(job.id)).state is S.COMPLETED

    asyncio.run(story())
    assert tries == [1, 2, 3]


def test_work_all_runs_every_due_job_and_reports_each_outcome(tc: TestClient) -> None:
    @tc.task(Charge)
    def charge(job: awa.SyncJob[Charge]) -> object:  # a sync handler runs the same way
        if job.args.cents == 0:
            return awa.Snooze(60)
        if job.args.cents < 0:
            raise awa.TerminalError("refunds go through the refund kind")
        return awa.RetryAfter(5) if job.attempt == 1 and job.args.cents > 1000 else None

    async def story() -> None:
        await tc.insert_many([Charge("a", 10), Charge("b", 0), Charge("c", -5), Charge("d", 5000)])
        results = await tc.work_all()
        assert [(r.job.args["customer"], r.state) for r in results] == [
            ("a", S.COMPLETED),
            ("b", S.SCHEDULED),
            ("c", S.FAILED),
            ("d", S.RETRYABLE),
        ]
        assert [type(r.outcome) for r in results] == [Complete, Snooze, Fail, RetryAfter]
        assert await tc.work_all() == []
        tc.advance(5)
        assert [(r.job.args["customer"], r.state) for r in await tc.work_all()] == [
            ("d", S.COMPLETED)
        ]
        tc.advance(60)
        assert [(r.job.args["customer"], r.state) for r in await tc.work_all()] == [
            ("b", S.SCHEDULED)  # snoozed again: cents is still 0
        ]

    asyncio.run(story())


def test_a_job_of_a_kind_nobody_handles_fails_as_it_would_on_a_worker(tc: TestClient) -> None:
    @tc.task(Charge)
    async def charge(job: awa.Job[Charge]) -> None: ...

    async def story() -> None:
        await tc.insert({"customer": "x"}, kind="refund", queue="payments")
        result = await tc.work_one()
        assert result is not None
        assert result.state is S.FAILED
        assert result.error is not None
        assert result.error.startswith("UnknownJobKind")

    asyncio.run(story())


def test_a_pydantic_model_round_trips_through_insert_claim_and_handler(tc: TestClient) -> None:
    import pydantic

    @awa.job_kind(queue="billing")
    class Invoice(pydantic.BaseModel):
        customer: str
        lines: list[int]
        note: str | None = None

    seen: list[Invoice] = []

    @tc.task(Invoice)
    async def invoice(job: awa.Job[Invoice]) -> None:
        seen.append(job.args)

    async def story() -> None:
        job = await tc.insert(Invoice(customer="ada", lines=[100, 250]))
        assert job.args == {"customer": "ada", "lines": [100, 250], "note": None}
        result = await tc.work_one()
        assert result is not None
        assert result.state is S.COMPLETED

    asyncio.run(story())
    assert seen == [Invoice(customer="ada", lines=[100, 250])]


def test_args_a_pydantic_model_refuses_fail_the_job_in_pydantics_words(tc: TestClient) -> None:
    import pydantic

    class Refund(pydantic.BaseModel):
        cents: pydantic.PositiveInt

    @tc.task(Refund)
    async def refund(job: awa.Job[Refund]) -> None: ...

    async def story() -> None:
        await tc.insert({"cents": -1}, kind="refund")
        result = await tc.work_one()
        assert result is not None
        assert result.state is S.FAILED
        assert result.error == (
            "SerializationError: args do not fit Refund: cents: Input should be greater than 0"
        )

    asyncio.run(story())


def test_a_handler_called_directly_with_a_made_job() -> None:
    async def charge(job: awa.Job[Charge]) -> object:
        job.set_progress(50, "authorised")
        await job.flush_progress()
        return awa.RetryAfter(10) if job.attempt < job.max_attempts else None

    job = make_job(Charge("ada", 5), attempt=2)
    assert (job.kind, job.queue, job.attempt, job.max_attempts) == ("charge", "payments", 2, 5)
    assert asyncio.run(charge(job)) == RetryAfter(10)
    assert job.progress == {"percent": 50, "message": "authorised"}
    assert asyncio.run(charge(make_job(Charge("ada", 5), attempt=5))) is None

    def sync_charge(job: awa.SyncJob[Charge]) -> None:
        job.update_metadata({"charged": job.args.cents})

    sync_job = make_job(Charge("bo", 7), sync=True, metadata={"source": "test"})
    sync_charge(sync_job)
    assert sync_job.metadata == {"source": "test", "charged": 7}
    with pytest.raises(awa.ValidationError, match="past max_attempts"):
        make_job(Charge("ada", 5), attempt=6)


def test_working_before_any_handler_is_registered_says_so() -> None:
    with TestClient() as tc, pytest.raises(awa.ValidationError, match="register a handler"):
        asyncio.run(tc.work_one())
