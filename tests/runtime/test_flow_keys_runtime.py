"""Flow-control keys from the client's side: the insert keywords, ``@awa.job_kind`` defaults
and periodic jobs carry them, and a worker runs a key's jobs as its limits allow without
waiting for a poll: the outcome written is what frees the key, and it wakes the claim."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import awa

from .conftest import Backend, memory_clients, reaches, run

S = awa.JobState


@awa.job_kind(queue="tenants", concurrency_key=lambda args: f"tenant-{args.tenant}")
@dataclass
class TenantWork:
    tenant: int


@awa.job_kind(queue="ledger", ordering_key="ledger")
@dataclass
class LedgerEntry:
    n: int


def test_keys_come_from_the_call_else_the_kind_and_are_checked_per_job() -> None:
    async def story() -> None:
        _, _, [client] = memory_clients()
        declared = await client.insert(TenantWork(7))
        assert (declared.queue, declared.concurrency_key) == ("tenants", "tenant-7")
        given = await client.insert(TenantWork(7), concurrency_key="vip")
        assert given.concurrency_key == "vip"
        fixed = await client.insert(LedgerEntry(1))
        assert (fixed.ordering_key, fixed.concurrency_key) == ("ledger", None)
        many = await client.insert_many(
            [TenantWork(n) for n in range(3)]
            + [awa.InsertSpec(args=LedgerEntry(2), ordering_key="other", concurrency_key="c")]
        )
        assert [job.concurrency_key for job in many] == ["tenant-0", "tenant-1", "tenant-2", "c"]
        assert many[-1].ordering_key == "other"
        with pytest.raises(awa.ValidationError, match="item 1: concurrency_key") as refused:
            await client.insert_many(
                [TenantWork(1), awa.InsertSpec(args=TenantWork(2), concurrency_key="")]
            )
        assert "\n" not in str(refused.value)
        assert len(await client.list_jobs(queue="tenants")) == 5  # the refused batch wrote none

    run(story)


def test_a_kind_whose_key_function_returns_junk_refuses_that_job_only() -> None:
    @awa.job_kind(concurrency_key=lambda args: "x" * 200)
    @dataclass
    class Junk:
        n: int

    async def story() -> None:
        _, _, [client] = memory_clients()
        with pytest.raises(awa.ValidationError, match="concurrency_key"):
            await client.insert(Junk(1))
        assert await client.list_jobs() == []

    run(story)


def test_a_declared_key_that_is_neither_text_nor_function_is_refused_at_once() -> None:
    with pytest.raises(awa.ValidationError, match="concurrency_key takes a text or a function"):
        awa.job_kind(concurrency_key=42)  # type: ignore[arg-type]


def test_a_periodic_job_carries_its_keys_into_the_schedule() -> None:
    _, _, [client] = memory_clients()
    schedule = client.periodic(
        "sync", "* * * * *", {"n": 1}, kind="sync", concurrency_key="c", ordering_key="o"
    )
    assert (schedule.job.concurrency_key, schedule.job.ordering_key) == ("c", "o")


def test_a_keys_jobs_run_in_order_one_after_another_without_a_poll(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()  # a manual clock: no poll interval ever passes
        ran: list[int] = []

        @client.task(LedgerEntry)
        async def handle(job: awa.Job[LedgerEntry]) -> None:
            ran.append(job.args.n)

        jobs = [await client.insert(LedgerEntry(n)) for n in range(6)]
        await client.start([("ledger", 4)])
        for job in jobs:
            await reaches(client, job.id, S.COMPLETED)
        assert ran == list(range(6))
        await client.shutdown()

    run(story)


def test_a_key_limited_queue_refills_its_keys_slots_without_a_poll(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        await client.configure_queue("tenants", key_concurrency_limit=1)

        @client.task(TenantWork)
        async def handle(job: awa.Job[TenantWork]) -> None:
            pass

        jobs = [await client.insert(TenantWork(n % 2)) for n in range(8)]
        await client.start([("tenants", 8)])
        for job in jobs:
            await reaches(client, job.id, S.COMPLETED)
        await client.shutdown()

    run(story)
