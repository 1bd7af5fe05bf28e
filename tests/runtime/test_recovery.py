"""Crash recovery, deadlines, cancellation, shutdown and leader failover, under a ManualClock."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import awa

from .conftest import Backend, advance_until, idle_task, memory_clients, reaches, run, until

S = awa.JobState
STALE_S = 90


@dataclass
class Work:
    name: str


def test_crashed_worker_is_rescued_and_the_job_completes_once_elsewhere(backend: Backend) -> None:
    async def story() -> None:
        clock, _, [dying, survivor] = backend.clients(2)
        started = asyncio.Event()
        completions: list[str] = []

        @dying.task(Work)
        async def hang(job: awa.Job[Work]) -> None:
            started.set()
            await asyncio.Event().wait()

        @survivor.task(Work)
        async def finish(job: awa.Job[Work]) -> None:
            completions.append(job.args.name)

        await dying.start([("default", 1)])
        job = await dying.insert(Work("report"))
        await asyncio.wait_for(started.wait(), 10)
        assert dying.runtime is not None
        await dying.runtime.abandon()  # SIGKILL: no finish, no heartbeats, no goodbye
        await survivor.start([("default", 1)])
        clock.advance(STALE_S + 1)
        retryable = await reaches(survivor, job.id, S.RETRYABLE)
        assert retryable.errors[-1].error == "heartbeat stale: worker presumed dead"
        clock.set(retryable.run_at)
        done = await reaches(survivor, job.id, S.COMPLETED)
        assert (done.attempt, done.run_lease) == (2, 2)
        assert completions == ["report"]
        await survivor.shutdown()

    run(story)


def test_crash_with_one_attempt_dead_letters_with_heartbeat_stale(backend: Backend) -> None:
    async def story() -> None:
        clock, _, [dying, survivor] = backend.clients(2)
        started = asyncio.Event()

        @dying.task(Work)
        async def hang(job: awa.Job[Work]) -> None:
            started.set()
            await asyncio.Event().wait()

        await dying.start([("default", 1)], dlq_enabled=True)
        job = await dying.insert(Work("once"), max_attempts=1)
        await asyncio.wait_for(started.wait(), 10)
        assert dying.runtime is not None
        await dying.runtime.abandon()
        idle_task(survivor, "other")
        await survivor.start([("other", 1)])
        clock.advance(STALE_S + 1)

        async def dead_lettered() -> bool:
            return bool(await survivor.list_dlq(queue="default"))

        await until(dead_lettered)
        [entry] = await survivor.list_dlq(queue="default")
        assert entry.job.id == job.id
        assert entry.reason == "heartbeat_stale"
        await survivor.shutdown()

    run(story)


def test_late_finish_from_a_presumed_dead_worker_is_dropped() -> None:
    """Memory only: the silence comes from a fault hook (the PostgreSQL variant below gets it
    from configuration, and tests/postgres/test_real_processes.py from a real process)."""

    async def story() -> None:
        clock, store, [slow, fast] = memory_clients(2)
        release = threading.Event()
        started = threading.Event()
        results: list[str] = []

        @slow.task(Work)
        def stuck(job: awa.SyncJob[Work]) -> None:
            started.set()
            release.wait(10)
            results.append("slow finished")
            raise RuntimeError("late failure")

        @fast.task(Work)
        async def quick(job: awa.Job[Work]) -> None:
            results.append("fast finished")

        await slow.start([("default", 1)])
        job = await slow.insert(Work("x"))
        await asyncio.to_thread(started.wait, 10)
        store.faults.stall_heartbeats([job.id])  # the slow worker is alive but silent
        await fast.start([("default", 1)])
        clock.advance(STALE_S + 1)
        retryable = await reaches(fast, job.id, S.RETRYABLE)
        clock.set(retryable.run_at)
        await reaches(fast, job.id, S.COMPLETED)
        release.set()
        await until(lambda: results == ["fast finished", "slow finished"])
        assert slow.runtime is not None
        await until(lambda: slow.runtime.stats.stale_finishes == 1)  # type: ignore[union-attr]
        done = await fast.get_job(job.id)
        assert (done.state, done.run_lease) == (S.COMPLETED, 2)
        assert [e.error for e in done.errors] == ["heartbeat stale: worker presumed dead"]
        await slow.shutdown()
        await fast.shutdown()

    run(story)


def test_late_finish_from_a_worker_that_stopped_heartbeating_is_dropped(
    backend: Backend,
) -> None:
    """The same story on any backend: the slow worker is alive, but its heartbeat interval is
    longer than the other worker's staleness limit, and it runs no maintenance."""

    async def story() -> None:
        clock, _, [slow, fast] = backend.clients(2)
        release = threading.Event()
        started = threading.Event()
        results: list[str] = []

        @slow.task(Work)
        def stuck(job: awa.SyncJob[Work]) -> None:
            started.set()
            release.wait(10)
            results.append("slow finished")
            raise RuntimeError("late failure")

        @fast.task(Work)
        async def quick(job: awa.Job[Work]) -> None:
            results.append("fast finished")

        await slow.start(
            [("default", 1)],
            heartbeat_interval=1000,
            heartbeat_staleness=3000,
            runtime_config=awa.RuntimeConfig(run_maintenance=False),
        )
        job = await slow.insert(Work("x"))
        await asyncio.to_thread(started.wait, 10)
        await fast.start([("default", 1)])
        clock.advance(STALE_S + 1)
        retryable = await reaches(fast, job.id, S.RETRYABLE)
        clock.set(retryable.run_at)
        await reaches(fast, job.id, S.COMPLETED)
        release.set()
        await until(lambda: results == ["fast finished", "slow finished"])
        assert slow.runtime is not None
        await until(lambda: slow.runtime.stats.stale_finishes == 1)  # type: ignore[union-attr]
        done = await fast.get_job(job.id)
        assert (done.state, done.run_lease) == (S.COMPLETED, 2)
        assert [e.error for e in done.errors] == ["heartbeat stale: worker presumed dead"]
        await slow.shutdown()
        await fast.shutdown()

    run(story)


def test_hung_async_handler_is_dropped_after_its_deadline_and_counted(backend: Backend) -> None:
    async def story() -> None:
        clock, _, [client] = backend.clients()
        cancelled = asyncio.Event()

        @client.task(Work)
        async def hang(job: awa.Job[Work]) -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        await client.start([("default", 1)], deadline_duration=60, dlq_enabled=True)
        job = await client.insert(Work("hang"), max_attempts=1)
        await reaches(client, job.id, S.RUNNING)
        clock.advance(61.5)  # past the deadline and its one-second grace
        await asyncio.wait_for(cancelled.wait(), 10)
        assert client.runtime is not None
        assert client.runtime.running("default") == 0  # the slot is free again

        async def dead_lettered() -> bool:
            return bool(await client.list_dlq())

        # the next maintenance pass rescues it; on PostgreSQL a heartbeat still in flight from
        # before the drop can hold the row, which rescue skips (SKIP LOCKED) until a later pass
        await advance_until(clock, dead_lettered, step_s=5)
        [entry] = await client.list_dlq()
        assert (entry.reason, entry.job.errors[-1].error) == (
            "deadline_exceeded",
            "hard deadline exceeded",
        )
        await client.shutdown()

    run(story)


def test_operator_cancel_stops_a_running_async_handler(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        started, stopped = asyncio.Event(), asyncio.Event()
        seen: list[bool] = []

        @client.task(Work)
        async def hang(job: awa.Job[Work]) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                seen.append(job.is_cancelled())
                stopped.set()
                raise

        await client.start([("default", 1)])
        job = await client.insert(Work("x"))
        await asyncio.wait_for(started.wait(), 10)
        await client.cancel(job.id)
        await asyncio.wait_for(stopped.wait(), 10)
        assert seen == [True]
        assert (await client.get_job(job.id)).state is S.CANCELLED
        await client.shutdown()

    run(story)


def test_cancelled_blocking_handler_keeps_its_slot_and_its_late_finish_is_ignored(
    backend: Backend,
) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        started, release = threading.Event(), threading.Event()
        observed: list[bool] = []

        @client.task(Work)
        def blocking(job: awa.SyncJob[Work]) -> None:
            started.set()
            release.wait(10)
            observed.append(job.is_cancelled())

        await client.start([("default", 1)])
        job = await client.insert(Work("x"))
        await asyncio.to_thread(started.wait, 10)
        await client.cancel(job.id)
        assert client.runtime is not None
        await until(lambda: client.runtime.attempts()[0].cancelled.is_set())  # type: ignore[union-attr, index]
        assert client.runtime.running("default") == 1  # still holds its slot
        release.set()
        await until(lambda: client.runtime.running("default") == 0)  # type: ignore[union-attr]
        assert observed == [True]
        assert (await client.get_job(job.id)).state is S.CANCELLED
        await client.shutdown()

    run(story)


def test_shutdown_drains_running_handlers_and_flushes_their_outcomes(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        started, release = asyncio.Event(), asyncio.Event()

        @client.task(Work)
        async def slow(job: awa.Job[Work]) -> None:
            started.set()
            await release.wait()

        await client.start([("default", 1)])
        job = await client.insert(Work("x"))
        await asyncio.wait_for(started.wait(), 10)
        shutdown = asyncio.create_task(client.shutdown(timeout=30))
        await asyncio.sleep(0)
        extra = await client.insert(Work("not claimed during shutdown"))
        release.set()
        await asyncio.wait_for(shutdown, 10)
        assert (await client.get_job(job.id)).state is S.COMPLETED
        assert (await client.get_job(extra.id)).state is S.AVAILABLE

    run(story)


def test_shutdown_past_its_timeout_releases_the_job_for_another_worker(backend: Backend) -> None:
    async def story() -> None:
        clock, _, [client, other] = backend.clients(2)
        started = asyncio.Event()

        @client.task(Work)
        async def hang(job: awa.Job[Work]) -> None:
            started.set()
            await asyncio.Event().wait()

        @other.task(Work)
        async def finish(job: awa.Job[Work]) -> None:
            return None

        await client.start([("default", 1)])
        job = await client.insert(Work("x"))
        await asyncio.wait_for(started.wait(), 10)
        shutdown = asyncio.create_task(client.shutdown(timeout=5))
        await advance_until(clock, shutdown.done, step_s=1)  # until shutdown gives up
        released = await client.get_job(job.id)
        assert released.state in (S.RETRYABLE, S.AVAILABLE)  # promoted once due
        assert released.errors[-1].error == "worker shut down before the attempt finished"
        await other.start([("default", 1)])
        done = await reaches(other, job.id, S.COMPLETED)  # no staleness window passes
        assert done.attempt == 2
        await other.shutdown()

    run(story)


def test_maintenance_leadership_moves_when_the_leader_dies(backend: Backend) -> None:
    async def story() -> None:
        clock, store, [first, second] = backend.clients(2)
        for client in (first, second):
            idle_task(client)
            await client.start([("default", 1)])
        assert first.runtime is not None
        assert second.runtime is not None
        leaders = [first.runtime.owner, second.runtime.owner]

        def leader() -> str | None:
            holder = store.leader()  # type: ignore[attr-defined]  # both backends have it
            return holder if holder in leaders else None

        await until(lambda: leader() is not None)
        dead = first if leader() == first.runtime.owner else second
        alive = second if dead is first else first
        assert dead.runtime is not None
        assert alive.runtime is not None
        await dead.runtime.abandon()
        # the dead leader's 15 s leadership lapses; the next maintenance pass takes over
        await advance_until(clock, lambda: leader() == alive.runtime.owner, step_s=5)  # type: ignore[union-attr]
        await alive.shutdown()

    run(story)
