"""Queue settings stay where they were put: a worker started without them changes nothing, and
a worker refuses queues it could not work."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import awa

from .conftest import Backend, idle_task, reaches, run, until

S = awa.JobState


@dataclass
class Work:
    fail: bool


def test_a_second_worker_started_without_dlq_settings_leaves_the_queues_routing_alone(
    backend: Backend,
) -> None:
    async def story() -> None:
        _, _, [first, second] = backend.clients(2)
        for client in (first, second):

            @client.task(Work)
            async def handle(job: awa.Job[Work]) -> None:
                if job.args.fail:
                    raise awa.TerminalError("bad input")

        await first.start([("default", 1)], dlq_enabled=True)
        await second.start([("default", 1)])  # a throwaway worker: no DLQ setting given
        [stats] = await second.queue_stats()
        assert stats.dlq_enabled is True
        await first.shutdown()
        job = await second.insert(Work(fail=True))

        async def dead_lettered() -> bool:
            return bool(await second.list_dlq(queue="default"))

        await until(dead_lettered)
        [entry] = await second.list_dlq(queue="default")
        assert (entry.job.id, entry.reason) == (job.id, "terminal_error")
        await second.shutdown()

    run(story)


def test_start_writes_dlq_routing_only_when_told_and_keeps_retention(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        idle_task(client)
        settings = await client.configure_queue(
            "default", dlq_enabled=True, finished_retention_s=3600, dlq_retention_s=86400
        )
        assert (settings.dlq_enabled, settings.finished_retention_s) == (True, 3600.0)
        await client.start([awa.QueueConfig(queue="default", dlq_enabled=False)])
        await client.shutdown()
        [stats] = await client.queue_stats()
        assert (stats.dlq_enabled, stats.finished_retention_s, stats.dlq_retention_s) == (
            False,
            3600.0,
            86400.0,
        )

    run(story)


def test_start_refuses_without_any_task() -> None:
    client = awa.Client("memory://")
    with pytest.raises(awa.ValidationError, match="no task is registered: add a handler"):
        client.start([("default", 1)])
    assert client.runtime is None
    client.close()


def test_start_refuses_a_queue_that_is_no_tasks_queue() -> None:
    async def story() -> None:
        client = awa.AsyncClient("memory://")

        @client.task(Work, queue="email")
        async def handle(job: awa.Job[Work]) -> None: ...

        with pytest.raises(awa.ValidationError) as refused:
            await client.start([("email", 1), ("emails", 1)])
        assert str(refused.value) == (
            "no task is registered on queue 'emails': its jobs would fail as unknown kinds"
            " (tasks are registered on email)"
        )
        assert client.runtime is None
        job = await client.insert(Work(fail=False))
        await client.start([("email", 1)])  # the queue of a task: fine
        await reaches(client, job.id, S.COMPLETED)
        await client.shutdown()

    run(story)


def test_configure_queue_refuses_bad_settings_in_one_line() -> None:
    client = awa.Client("memory://")
    with pytest.raises(awa.ValidationError, match="nothing to configure"):
        client.configure_queue("default")
    with pytest.raises(awa.ValidationError, match="finished_retention must be > 0"):
        client.configure_queue("default", dlq_enabled=True, finished_retention_s=0)
    assert client.queue_stats() == []  # a refusal changes nothing
