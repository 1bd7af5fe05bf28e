"""Externally completed work through real handlers: park, resume, complete, retry, time out."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

import awa

from .conftest import Backend, reaches, run, until

S = awa.JobState


@dataclass
class Payment:
    amount: int


def test_returned_wait_for_callback_parks_until_the_external_system_completes(
    backend: Backend,
) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        tokens: list[awa.CallbackToken] = []

        @client.task(Payment)
        async def charge(job: awa.Job[Payment]) -> object:
            token = await job.register_callback(timeout=600)
            tokens.append(token)
            return awa.WaitForCallback(token)

        await client.start([("default", 1)])
        job = await client.insert(Payment(10))
        await reaches(client, job.id, S.WAITING_EXTERNAL)
        assert client.runtime is not None
        assert client.runtime.running("default") == 0  # a returned wait frees the slot
        done = await client.complete_external(tokens[0].callback_id, {"receipt": "r-1"})
        assert (done.state, done.callback_result) == (S.COMPLETED, {"receipt": "r-1"})
        with pytest.raises(awa.CallbackNotFound):
            await client.complete_external(tokens[0].callback_id, {"receipt": "again"})
        await client.shutdown()

    run(story)


def test_awaited_callback_resumes_the_live_handler_with_the_payload(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        tokens: list[awa.CallbackToken] = []
        payloads: list[Any] = []

        @client.task(Payment)
        async def charge(job: awa.Job[Payment]) -> None:
            token = await job.register_callback()
            tokens.append(token)
            payloads.append(await job.wait_for_callback(token))

        await client.start([("default", 1)])
        job = await client.insert(Payment(10))
        await reaches(client, job.id, S.WAITING_EXTERNAL)
        resumed = await client.resume_external(tokens[0].callback_id, {"status": "paid"})
        assert resumed.state is S.RUNNING
        done = await reaches(client, job.id, S.COMPLETED)
        assert payloads == [{"status": "paid"}]
        assert done.attempt == 1
        await client.shutdown()

    run(story)


def test_sync_handler_waits_for_its_callback_in_its_thread(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        tokens: list[awa.CallbackToken] = []
        payloads: list[Any] = []

        @client.task(Payment)
        def charge(job: awa.SyncJob[Payment]) -> None:
            token = job.register_callback()
            tokens.append(token)
            payloads.append(job.wait_for_callback(token))

        await client.start([("default", 1)])
        job = await client.insert(Payment(3))
        await reaches(client, job.id, S.WAITING_EXTERNAL)
        await client.resume_external(tokens[0].callback_id, "ok")
        await reaches(client, job.id, S.COMPLETED)
        assert payloads == ["ok"]
        await client.shutdown()

    run(story)


def test_callback_retry_starts_the_job_again_with_a_fresh_budget(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        tokens: list[awa.CallbackToken] = []
        attempts: list[int] = []

        @client.task(Payment)
        async def charge(job: awa.Job[Payment]) -> object:
            attempts.append(job.attempt)
            if len(attempts) > 1:
                return None
            token = await job.register_callback()
            tokens.append(token)
            return awa.WaitForCallback(token)

        await client.start([("default", 1)])
        job = await client.insert(Payment(1), max_attempts=1)
        await reaches(client, job.id, S.WAITING_EXTERNAL)
        await client.retry_external(tokens[0].callback_id)
        done = await reaches(client, job.id, S.COMPLETED)
        assert attempts == [1, 1]
        assert done.run_lease == 2
        await client.shutdown()

    run(story)


def test_callback_timeout_retries_then_fails_into_the_dlq(backend: Backend) -> None:
    async def story() -> None:
        clock, _, [client] = backend.clients()
        attempts: list[int] = []

        @client.task(Payment)
        async def charge(job: awa.Job[Payment]) -> object:
            attempts.append(job.attempt)
            return awa.WaitForCallback(await job.register_callback(timeout=60))

        await client.start([("default", 1)], dlq_enabled=True)
        job = await client.insert(Payment(1), max_attempts=2)
        await reaches(client, job.id, S.WAITING_EXTERNAL)
        clock.advance(61)
        retryable = await reaches(client, job.id, S.RETRYABLE)
        assert retryable.errors[-1].error == "callback timed out"
        clock.set(retryable.run_at)
        await until(lambda: attempts == [1, 2])
        await reaches(client, job.id, S.WAITING_EXTERNAL)
        clock.advance(61)

        async def dead_lettered() -> bool:
            return bool(await client.list_dlq())

        await until(dead_lettered)
        [entry] = await client.list_dlq()
        assert (entry.reason, entry.job.errors[-1].error) == (
            "callback_timeout",
            "callback timed out",
        )
        assert [e.attempt for e in entry.job.errors] == [1, 2]
        await client.shutdown()

    run(story)


def test_external_failure_fails_the_parked_job_at_once(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        tokens: list[awa.CallbackToken] = []

        @client.task(Payment)
        async def charge(job: awa.Job[Payment]) -> object:
            tokens.append(await job.register_callback())
            return awa.WaitForCallback(tokens[-1])

        await client.start([("default", 1)])
        job = await client.insert(Payment(1), max_attempts=5)
        await reaches(client, job.id, S.WAITING_EXTERNAL)
        failed = await client.fail_external(tokens[0].callback_id, "card declined")
        assert (failed.state, failed.attempt) == (S.FAILED, 1)
        assert failed.errors[-1].error == "card declined"
        assert failed.errors[-1].terminal
        await client.shutdown()

    run(story)


def test_answer_before_the_park_completes_and_the_later_wait_does_nothing(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()

        @client.task(Payment)
        async def charge(job: awa.Job[Payment]) -> object:
            token = await job.register_callback()
            await client.complete_external(token.callback_id, "fast answer")
            return awa.WaitForCallback(token)

        await client.start([("default", 1)])
        job = await client.insert(Payment(1))
        done = await reaches(client, job.id, S.COMPLETED)
        assert done.callback_result == "fast answer"
        assert client.runtime is not None
        await until(lambda: client.runtime.stats.stale_finishes == 1)  # type: ignore[union-attr]
        await client.shutdown()

    run(story)


def test_unknown_callback_id_raises_callback_not_found(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        for call in (client.complete_external, client.resume_external):
            with pytest.raises(awa.CallbackNotFound):
                await call("no-such-callback", None)
        with pytest.raises(awa.CallbackNotFound):
            await client.retry_external("no-such-callback")
        with pytest.raises(awa.CallbackNotFound):
            await client.heartbeat_callback("no-such-callback", timeout=10)

    run(story)


def test_concurrent_resolutions_of_one_callback_have_one_winner(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        tokens: list[awa.CallbackToken] = []

        @client.task(Payment)
        async def charge(job: awa.Job[Payment]) -> object:
            token = await job.register_callback()
            tokens.append(token)
            return awa.WaitForCallback(token)

        await client.start([("default", 1)])
        job = await client.insert(Payment(1))
        await reaches(client, job.id, S.WAITING_EXTERNAL)
        results = await asyncio.gather(
            *(client.complete_external(tokens[0].callback_id, n) for n in range(8)),
            return_exceptions=True,
        )
        winners = [r for r in results if not isinstance(r, BaseException)]
        assert len(winners) == 1
        assert all(isinstance(r, awa.CallbackNotFound) for r in results if r not in winners)
        await client.shutdown()

    run(story)
