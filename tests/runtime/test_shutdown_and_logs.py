"""A graceful shutdown releases what it cannot finish (row 22), and a worker's log says what
happened to each attempt, with the fields as ``extra``."""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass

import pytest

import awa
from awa.runtime.observe import AttemptEnd, Ending, Observer

from .conftest import Backend, advance_until, idle_task, reaches, run, until

S = awa.JobState


@dataclass
class Work:
    mode: str


class Heard(Observer):
    def __init__(self) -> None:
        self.ends: list[AttemptEnd] = []
        self.started: list[str] = []
        self.stopped: list[int] = []

    def attempt_ended(self, end: AttemptEnd) -> None:
        self.ends.append(end)

    def worker_started(self, owner: str, queues: object) -> None:
        self.started.append(owner)

    def worker_stopped(self, owner: str, released: int) -> None:
        self.stopped.append(released)


def test_shutdown_releases_a_handler_still_running_so_another_worker_takes_it_at_once(
    backend: Backend,
) -> None:
    async def story() -> None:
        clock, _, [leaving, staying] = backend.clients(2)
        heard = Heard()
        started = asyncio.Event()

        @leaving.task(Work)
        async def hang(job: awa.Job[Work]) -> None:
            started.set()
            await asyncio.Event().wait()  # never returns by itself

        ran: list[int] = []

        @staying.task(Work)
        async def finish(job: awa.Job[Work]) -> None:
            ran.append(job.attempt)

        job = await leaving.insert(Work("slow"), max_attempts=3)
        await leaving.start([("default", 1)], observers=[heard])
        await started.wait()
        shutdown = asyncio.create_task(leaving.shutdown(timeout=5))
        await advance_until(clock, shutdown.done, step_s=1)  # the timeout runs on the clock
        released = await leaving.get_job(job.id)
        assert released.state in (S.RETRYABLE, S.AVAILABLE)  # promoted once due
        assert released.run_at <= clock.now()  # no backoff: due at once
        assert released.errors[-1].error == "worker shut down before the attempt finished"
        assert heard.stopped == [1]
        [end] = heard.ends
        assert (end.ending, end.job_id, end.error) == (
            Ending.RELEASED,
            job.id,
            "worker shut down before the attempt finished",
        )
        await staying.start([("default", 1)])
        done = await reaches(staying, job.id, S.COMPLETED)
        assert (done.attempt, ran) == (2, [2])
        await staying.shutdown()

    run(story)


def test_every_ended_attempt_leaves_one_log_line_with_its_fields(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> object:
            if job.args.mode == "fail":
                raise ValueError("bad row 7")
            if job.args.mode == "snooze":
                return awa.Snooze(60)
            return None

        ok = await client.insert(Work("ok"))
        failing = await client.insert(Work("fail"), max_attempts=1)
        snoozing = await client.insert(Work("snooze"))
        retrying = await client.insert(Work("fail"), max_attempts=2)
        await client.start([("default", 4)])
        await reaches(client, ok.id, S.COMPLETED)
        await reaches(client, failing.id, S.FAILED)
        snoozed = await reaches(client, snoozing.id, S.SCHEDULED)
        retried = await reaches(client, retrying.id, S.RETRYABLE)
        await client.shutdown()

        lines = {r.job_id: r for r in caplog.records if hasattr(r, "job_id")}  # type: ignore[attr-defined]
        failed = lines[failing.id]
        assert failed.levelno == logging.WARNING
        assert str(failing.id) in failed.getMessage()
        assert failed.getMessage().endswith(
            "failed after " + f"{failed.duration_s:.3f}s: ValueError: bad row 7"
        )  # type: ignore[attr-defined]
        assert (failed.outcome, failed.error_type, failed.attempt, failed.max_attempts) == (  # type: ignore[attr-defined]
            "failed",
            "ValueError",
            1,
            1,
        )
        assert failed.next_run_at is None  # type: ignore[attr-defined]
        assert lines[snoozing.id].levelno == logging.INFO
        assert lines[snoozing.id].outcome == "snoozed"  # type: ignore[attr-defined]
        # a retry and a snooze say when the job runs again: the run_at the store wrote
        for line, job in ((lines[retrying.id], retried), (lines[snoozing.id], snoozed)):
            at = job.run_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            assert line.next_run_at == at  # type: ignore[attr-defined]
            assert line.getMessage().endswith(f"; runs again at {at}")
        assert (
            lines[retrying.id]
            .getMessage()
            .startswith(f"job {retrying.id} (work, queue default) attempt 1/2 retried after ")
        )
        assert lines[ok.id].levelno == logging.DEBUG  # one line per completion only at DEBUG
        worker = [r.getMessage() for r in caplog.records if r.name == "awa.worker"]
        assert sum("started on queues default" in m for m in worker) == 1
        assert sum("stopped (0 running attempts released)" in m for m in worker) == 1

    caplog.set_level(logging.DEBUG, logger="awa.worker")
    run(story)


def test_a_rescue_is_logged_at_warning_by_the_leader(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    async def story() -> None:
        clock, store, [client] = backend.clients()
        job = await client.insert(Work("ok"), max_attempts=2)
        [claimed] = store.claim("default", limit=1)  # a worker that then died
        idle_task(client, "other")
        await client.start([("other", 1)], heartbeat_interval=30, heartbeat_staleness=90)
        clock.advance(91)
        await until(lambda: any("rescued" in r.getMessage() for r in caplog.records))
        await client.shutdown()
        [line] = [r for r in caplog.records if "rescued" in r.getMessage()]
        assert line.levelno == logging.WARNING
        assert line.job_id == claimed.id == job.id  # type: ignore[attr-defined]
        assert "heartbeat stale: worker presumed dead" in line.getMessage()

    caplog.set_level(logging.INFO, logger="awa.worker")
    run(story)


def test_an_observer_that_raises_does_not_stop_the_others(backend: Backend) -> None:
    class Broken(Observer):
        def attempt_ended(self, end: AttemptEnd) -> None:
            raise RuntimeError("observer bug")

    async def story() -> None:
        _, _, [client] = backend.clients()
        heard = Heard()

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            return None

        job = await client.insert(Work("ok"))
        await client.start([("default", 1)], observers=[Broken(), heard])
        await reaches(client, job.id, S.COMPLETED)
        await until(lambda: len(heard.ends) == 1)
        await client.shutdown()
        assert heard.ends[0].ending is Ending.COMPLETED

    run(story)


def test_a_job_cancelled_while_running_leaves_one_info_line_and_is_counted(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing is written for an attempt whose job was cancelled under it, but the worker
    still says so once, and counts it as ``outcome="cancelled"``, for either kind of handler."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from awa.metrics import Metrics

    async def story() -> None:
        _, _, [client] = backend.clients()
        reader = InMemoryMetricReader()
        heard = Heard()
        started, stopped = asyncio.Event(), asyncio.Event()
        blocking, release = threading.Event(), threading.Event()

        @client.task(Work, queue="media")
        async def hang(job: awa.Job[Work]) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                stopped.set()

        @client.task(Work, queue="media", kind="block")
        def block(job: awa.SyncJob[Work]) -> None:
            blocking.set()
            release.wait(10)

        metrics = Metrics(MeterProvider(metric_readers=[reader]))
        await client.start([("media", 2)], observers=[metrics, heard])
        running = await client.insert(Work("async"), queue="media")
        blocked = await client.insert(Work("sync"), queue="media", kind="block")
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.to_thread(blocking.wait, 10)
        await client.cancel(running.id)
        await client.cancel(blocked.id)
        await asyncio.wait_for(stopped.wait(), 10)
        assert client.runtime is not None
        attempts = client.runtime.attempts()
        await until(lambda: all(a.cancelled.is_set() for a in attempts))
        release.set()  # the blocking handler returns; what it returns is dropped
        await until(lambda: len(heard.ends) == 2)
        await client.shutdown()

        assert {(e.job_id, e.ending) for e in heard.ends} == {
            (running.id, Ending.CANCELLED),
            (blocked.id, Ending.CANCELLED),
        }
        for job, kind in ((running, "work"), (blocked, "block")):
            [line] = [r for r in caplog.records if getattr(r, "job_id", None) == job.id]
            assert line.levelno == logging.INFO
            assert line.getMessage().startswith(
                f"job {job.id} ({kind}, queue media) attempt 1/25 cancelled after "
            )
            assert line.getMessage().endswith(
                ": cancelled while running; the handler's outcome was not written"
            )
            assert (line.outcome, line.queue, line.kind) == ("cancelled", "media", kind)  # type: ignore[attr-defined]
            assert (await client.get_job(job.id)).state is S.CANCELLED
        data = reader.get_metrics_data()
        assert data is not None
        counted = {
            (point.attributes["outcome"], point.attributes["kind"]): point.value
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == "awa.attempts"
            for point in metric.data.data_points
        }
        assert counted == {("cancelled", "work"): 1, ("cancelled", "block"): 1}

    caplog.set_level(logging.INFO, logger="awa.worker")
    run(story)
