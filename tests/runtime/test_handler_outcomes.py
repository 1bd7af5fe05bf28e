"""Every handler outcome of the spec, through real handlers on the runtime."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import pytest

import awa
from awa.adapters.memory import ManualClock

from .conftest import Backend, reaches, run, until

S = awa.JobState


@dataclass
class Work:
    mode: str
    n: int = 0


def _client(backend: Backend) -> tuple[ManualClock, awa.AsyncClient]:
    clock, _, [client] = backend.clients()
    return clock, client


def test_returning_none_completes_the_job(backend: Backend) -> None:
    async def story() -> None:
        clock, client = _client(backend)
        seen: list[int] = []

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            seen.append(job.attempt)

        await client.start([("default", 2)])
        job = await client.insert(Work("ok"))
        done = await reaches(client, job.id, S.COMPLETED)
        assert seen == [1]
        assert done.finalized_at == clock.now()
        await client.shutdown()

    run(story)


def test_retry_after_then_success_on_the_next_attempt(backend: Backend) -> None:
    async def story() -> None:
        clock, client = _client(backend)

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> object:
            return awa.RetryAfter(30) if job.attempt == 1 else None

        await client.start([("default", 2)])
        job = await client.insert(Work("retry"))
        retryable = await reaches(client, job.id, S.RETRYABLE)
        assert retryable.run_at == clock.now() + __import__("datetime").timedelta(seconds=30)
        clock.advance(30)
        done = await reaches(client, job.id, S.COMPLETED)
        assert done.attempt == 2
        assert [e.attempt for e in done.errors] == [1]
        await client.shutdown()

    run(story)


def test_exception_records_type_message_and_traceback_then_fails_when_spent(
    backend: Backend,
) -> None:
    async def story() -> None:
        clock, client = _client(backend)

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            raise ValueError(f"bad row {job.attempt}")

        await client.start([("default", 1)], dlq_enabled=True)
        job = await client.insert(Work("boom"), max_attempts=2)
        await reaches(client, job.id, S.RETRYABLE)
        clock.advance(3)  # backoff after attempt 1 is 2..2.5 s
        await until(lambda: _in_dlq(client, job.id))
        [entry] = await client.list_dlq()
        assert entry.reason == "max_attempts_exhausted"
        assert [e.error for e in entry.job.errors] == [
            "ValueError: bad row 1",
            "ValueError: bad row 2",
        ]
        assert "raise ValueError" in (entry.job.errors[0].traceback or "")
        await client.shutdown()

    run(story)


async def _in_dlq(client: awa.AsyncClient, job_id: int) -> bool:
    return any(e.job.id == job_id for e in await client.list_dlq())


def test_terminal_error_fails_at_once(backend: Backend) -> None:
    async def story() -> None:
        _, client = _client(backend)

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            raise awa.TerminalError("cannot parse invoice")

        await client.start([("default", 1)])
        job = await client.insert(Work("x"))
        failed = await reaches(client, job.id, S.FAILED)
        assert failed.attempt == 1
        assert failed.errors[-1].error == "TerminalError: cannot parse invoice"
        assert failed.errors[-1].terminal
        await client.shutdown()

    run(story)


def test_snooze_runs_again_later_without_spending_an_attempt(backend: Backend) -> None:
    async def story() -> None:
        clock, client = _client(backend)
        polls: list[int] = []

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> object:
            polls.append(job.attempt)
            return awa.Snooze(60) if len(polls) < 3 else None

        await client.start([("default", 1)])
        job = await client.insert(Work("poll"), max_attempts=1)
        for runs in (1, 2):
            await until(lambda runs=runs: len(polls) == runs)  # type: ignore[misc]
            await reaches(client, job.id, S.SCHEDULED)
            clock.advance(60)
        done = await reaches(client, job.id, S.COMPLETED)
        assert polls == [1, 1, 1]
        assert done.errors == ()
        await client.shutdown()

    run(story)


def test_cancel_outcome_records_the_reason(backend: Backend) -> None:
    async def story() -> None:
        _, client = _client(backend)

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> object:
            return awa.Cancel("customer deleted")

        await client.start([("default", 1)], dlq_enabled=True)
        job = await client.insert(Work("x"))
        cancelled = await reaches(client, job.id, S.CANCELLED)
        assert cancelled.errors[-1].error == "customer deleted"
        assert await client.list_dlq() == []
        await client.shutdown()

    run(story)


def test_panic_in_a_sync_handler_thread_is_recorded_as_handler_panicked(backend: Backend) -> None:
    async def story() -> None:
        _, client = _client(backend)

        @client.task(Work)
        def handle(job: awa.SyncJob[Work]) -> None:
            raise SystemExit("native extension gave up")

        await client.start([("default", 1)])
        job = await client.insert(Work("x"), max_attempts=1)
        failed = await reaches(client, job.id, S.FAILED)
        assert failed.errors[-1].error == "handler panicked: SystemExit: native extension gave up"
        await client.shutdown()

    run(story)


def test_sync_handlers_run_in_threads(backend: Backend) -> None:
    async def story() -> None:
        _, client = _client(backend)
        threads: list[str] = []

        @client.task(Work)
        def handle(job: awa.SyncJob[Work]) -> None:
            threads.append(threading.current_thread().name)
            job.set_progress(100, "done")

        await client.start([("default", 2)])
        jobs = await client.insert_many([Work("a"), Work("b")])
        for job in jobs:
            await reaches(client, job.id, S.COMPLETED)
        assert all(name.startswith("awa-handler") for name in threads)
        await client.shutdown()

    run(story)


@pytest.mark.parametrize(
    ("kind", "args", "error"),
    [
        (
            "nobody_handles_this",
            {"x": 1},
            "UnknownJobKind: no handler for kind 'nobody_handles_this'",
        ),
        ("work", {"mode": 5, "n": "not a number"}, "SerializationError: args do not fit Work"),
    ],
)
def test_unknown_kinds_and_undeserializable_args_fail_terminally(
    backend: Backend, kind: str, args: dict[str, object], error: str
) -> None:
    async def story() -> None:
        _, client = _client(backend)

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            raise AssertionError("must not run")

        await client.start([("default", 1)], dlq_enabled=True)
        job = await client.insert(args, kind=kind)
        await until(lambda: _in_dlq(client, job.id))
        [entry] = await client.list_dlq()
        assert entry.reason == "terminal_error"
        assert entry.job.errors[-1].error.startswith(error)
        assert entry.job.errors[-1].terminal
        await client.shutdown()

    run(story)


def test_progress_and_metadata_are_flushed_with_heartbeats_and_the_outcome(
    backend: Backend,
) -> None:
    async def story() -> None:
        clock, client = _client(backend)
        release = asyncio.Event()

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            job.set_progress(40, "halfway")
            job.update_metadata({"rows": 400})
            await release.wait()
            job.update_metadata({"rows": 1000})

        await client.start([("default", 1)], heartbeat_interval=10, heartbeat_staleness=30)
        job = await client.insert(Work("x"), metadata={"source": "import"})
        await reaches(client, job.id, S.RUNNING)
        clock.advance(10)

        async def flushed() -> bool:
            return (await client.get_job(job.id)).progress == {"percent": 40, "message": "halfway"}

        await until(flushed)
        assert (await client.get_job(job.id)).metadata == {"source": "import", "rows": 400}
        release.set()
        done = await reaches(client, job.id, S.COMPLETED)
        assert done.metadata == {"source": "import", "rows": 1000}
        assert done.progress is None
        await client.shutdown()

    run(story)


def test_a_handler_sees_its_own_progress_and_metadata_and_flushes_them_now(
    backend: Backend,
) -> None:
    async def story() -> None:
        clock, client = _client(backend)
        flushed = asyncio.Event()
        release = asyncio.Event()
        seen: list[object] = []

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            job.set_progress(25, "quarter")
            job.update_metadata({"rows": 250})
            seen.append((job.progress, job.metadata))
            job.set_progress(200)  # an overshooting counter is clamped, not an error
            seen.append(job.progress)
            job.set_progress(-3, "rewound")
            seen.append(job.progress)
            await job.flush_progress()  # written now: no heartbeat, no time passing
            flushed.set()
            await release.wait()

        await client.start([("default", 1)], heartbeat_interval=30, heartbeat_staleness=90)
        job = await client.insert(Work("x"), metadata={"source": "import"})
        await asyncio.wait_for(flushed.wait(), 10)
        assert seen == [
            ({"percent": 25, "message": "quarter"}, {"source": "import", "rows": 250}),
            {"percent": 100},
            {"percent": 0, "message": "rewound"},
        ]
        stored = await client.get_job(job.id)
        assert stored.state is S.RUNNING
        assert stored.progress == {"percent": 0, "message": "rewound"}
        assert stored.metadata == {"source": "import", "rows": 250}
        assert stored.heartbeat_at == clock.now()
        release.set()
        await reaches(client, job.id, S.COMPLETED)
        await client.shutdown()

    run(story)


def test_a_sync_handler_flushes_progress_and_a_cancelled_one_learns_it_ended(
    backend: Backend,
) -> None:
    async def story() -> None:
        _, client = _client(backend)
        flushed, cancelled = threading.Event(), threading.Event()
        outcomes: list[str] = []

        @client.task(Work)
        def handle(job: awa.SyncJob[Work]) -> None:
            job.set_progress(50, "half")
            job.flush_progress()
            flushed.set()
            cancelled.wait(10)
            try:
                job.flush_progress()
            except awa.AttemptEnded:
                outcomes.append("ended")
                raise

        await client.start([("default", 1)])
        job = await client.insert(Work("x"))
        await asyncio.to_thread(flushed.wait, 10)
        assert (await client.get_job(job.id)).progress == {"percent": 50, "message": "half"}
        await client.cancel(job.id)
        cancelled.set()
        await until(lambda: outcomes == ["ended"])
        assert (await client.get_job(job.id)).state is S.CANCELLED
        await client.shutdown()

    run(story)


def test_a_progress_percent_that_is_not_a_number_is_refused() -> None:
    from awa.runtime.attempts import Attempt
    from awa.runtime.config import QueueConfig

    store = awa.MemoryStore(ManualClock())
    store.insert([awa.NewJob(kind="work")])
    [record] = store.claim("default", limit=1)
    attempt = Attempt(record, QueueConfig(queue="default"), is_async=True, now=record.run_at)
    for bad in (float("nan"), "50", True, None):
        with pytest.raises(awa.ValidationError, match="must be a number"):
            attempt.set_progress(bad)  # type: ignore[arg-type]
    assert attempt.latest_progress is None
