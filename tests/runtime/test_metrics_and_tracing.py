"""Metrics through OpenTelemetry's API (read back with the SDK's in-memory reader), and traces
that cross the queue: the inserting span is the parent of every attempt's span."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import awa
import awa.tracing
from awa.metrics import UNHANDLED, Metrics

from .conftest import Backend, idle_task, memory_clients, reaches, run, until

S = awa.JobState


@dataclass
class Work:
    fail: bool = False


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def _value(points: list[Any], **attributes: object) -> Any:
    matching = [p for p in points if all(p.attributes.get(k) == v for k, v in attributes.items())]
    assert len(matching) == 1, (attributes, [p.attributes for p in points])
    return matching[0]


def test_metrics_count_attempts_by_outcome_and_measure_handlers_claims_and_queues(
    backend: Backend,
) -> None:
    async def story() -> None:
        clock, _, [client] = backend.clients()
        reader = InMemoryMetricReader()
        metrics = Metrics(MeterProvider(metric_readers=[reader]))

        @client.task(Work, queue="mail")
        async def handle(job: awa.Job[Work]) -> None:
            if job.args.fail:
                raise ValueError("bad address")

        ok = [await client.insert(Work()) for _ in range(3)]
        failing = await client.insert(Work(fail=True), max_attempts=1)
        await client.insert(Work(), queue="mail", run_at=clock.now() + timedelta(hours=1))
        await client.start([("mail", 10)], observers=[metrics])
        for job in ok:
            await reaches(client, job.id, S.COMPLETED)
        await reaches(client, failing.id, S.FAILED)
        await until(lambda: "awa.jobs" in _points(reader) and _leads(reader))
        points = _points(reader)
        attempts = points["awa.attempts"]
        assert _value(attempts, outcome="completed", kind="work", queue="mail").value == 3
        assert _value(attempts, outcome="failed", kind="work", queue="mail").value == 1
        handler = _value(points["awa.handler.duration"], outcome="completed")
        assert handler.count == 3
        assert _value(points["awa.pickup.latency"], queue="mail").count == 4
        assert _value(points["awa.claim.size"], queue="mail").sum >= 4
        jobs = points["awa.jobs"]
        assert _value(jobs, queue="mail", state="scheduled").value == 1
        assert _value(points["awa.dlq.depth"], queue="mail").value == 0
        assert _value(points["awa.queue.oldest_age"], queue="mail").value == 0
        assert _value(points["awa.maintenance.leader"]).value == 1
        await client.shutdown()
        assert _value(_points(reader)["awa.maintenance.leader"]).value == 0
        assert "awa.jobs" not in _points(reader) or not _points(reader)["awa.jobs"]

    run(story)


def _leads(reader: InMemoryMetricReader) -> bool:
    points = _points(reader).get("awa.maintenance.leader", [])
    return bool(points) and points[0].value == 1


def test_rescues_are_counted_by_cause_by_the_leader() -> None:
    async def story() -> None:
        clock, store, [client] = memory_clients()
        reader = InMemoryMetricReader()
        metrics = Metrics(MeterProvider(metric_readers=[reader]))
        await client.insert(Work(), max_attempts=2)
        store.claim("default", limit=1)  # a worker that then died
        idle_task(client, "other")
        await client.start(
            [("other", 1)], heartbeat_interval=30, heartbeat_staleness=90, observers=[metrics]
        )
        clock.advance(91)
        await until(lambda: "awa.rescues" in _points(reader))
        rescues = _points(reader)["awa.rescues"]
        assert _value(rescues, cause="heartbeat_stale", queue="default").value == 1
        await client.shutdown()

    run(story)


KEY_HELD = {"queue": "api", "reason": "key_concurrency"}


def test_jobs_a_flow_limit_holds_back_are_counted_by_queue_and_reason(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        reader = InMemoryMetricReader()
        metrics = Metrics(MeterProvider(metric_readers=[reader]))
        await client.configure_queue("api", key_concurrency_limit=1)
        release = asyncio.Event()

        @client.task(Work, queue="api")
        async def handle(job: awa.Job[Work]) -> None:
            await release.wait()

        jobs = [await client.insert(Work(), concurrency_key="t") for _ in range(3)]
        await client.start([("api", 5)], observers=[metrics])
        await reaches(client, jobs[0].id, S.RUNNING)

        def throttled() -> bool:
            points = _points(reader).get("awa.claims.throttled", [])
            return any(dict(p.attributes) == KEY_HELD for p in points)

        await until(throttled)
        held = _value(_points(reader)["awa.claims.throttled"], **KEY_HELD)
        # the key's jobs behind the running one: each of them on memory and SQLite, one a
        # claim for the key on PostgreSQL's keyed window (docs/flow-control.md)
        assert held.value >= (1 if backend.name == "postgres" else 2)
        release.set()
        for job in jobs:
            await reaches(client, job.id, S.COMPLETED)
        await client.shutdown()

    run(story)


@dataclass
class Charge:
    cents: int


JUNK = 2000  # as many as the SDK's (and so the Prometheus exporter's) cardinality limit


def test_kinds_and_queues_without_a_task_share_a_label_so_junk_cannot_crowd_out_real_ones() -> None:
    async def story() -> None:
        _, store, [client] = memory_clients()
        reader = InMemoryMetricReader()
        metrics = Metrics(MeterProvider(metric_readers=[reader]))

        @client.task(Charge, queue="payments", kind="charge_card")
        async def charge(job: awa.Job[Charge]) -> None:
            return None

        # a producer's junk, first in line: kinds no handler takes on the worked queue, and
        # queues nobody works (their jobs wait there, measured by the leader)
        store.insert(
            [awa.NewJob(kind=f"junk_{n}", queue="payments", max_attempts=1) for n in range(JUNK)]
        )
        store.insert([awa.NewJob(kind="charge_card", queue=f"junk_{n}") for n in range(JUNK)])
        real = await client.insert(Charge(100))
        await client.start([("payments", 100)], observers=[metrics])
        await reaches(client, real.id, S.COMPLETED)

        def ended() -> int:
            return sum(p.value for p in _points(reader).get("awa.attempts", []))

        await until(lambda: ended() == JUNK + 1 and _leads(reader))
        points = _points(reader)
        attempts = points["awa.attempts"]
        assert (
            _value(attempts, outcome="completed", kind="charge_card", queue="payments").value == 1
        )
        assert _value(attempts, outcome="failed", kind=UNHANDLED, queue="payments").value == JUNK
        assert len(attempts) == 2
        assert len(points["awa.handler.duration"]) == 2
        jobs = points["awa.jobs"]
        assert {p.attributes["queue"] for p in jobs} == {"payments", UNHANDLED}
        assert _value(jobs, queue=UNHANDLED, state="available").value == JUNK
        assert _value(points["awa.dlq.depth"], queue=UNHANDLED).value == 0
        every = [p for found in points.values() for p in found]
        assert not [p for p in every if "otel.metric.overflow" in p.attributes]
        print(f"{len(every)} series in all")
        assert len(every) < 50
        await client.shutdown()

    run(story)


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """A tracer provider recording every span, as an application that traces would set
    (patched in, not set globally: the global provider can be set only once per process)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    _look_up_the_provider_again(monkeypatch)
    yield exporter
    provider.shutdown()


def _look_up_the_provider_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget what ``awa.tracing`` last found (restored after the test)."""
    monkeypatch.setattr(awa.tracing._Provider, "configured", False)
    monkeypatch.setattr(awa.tracing._Provider, "next_check", 0.0)


def test_an_untraced_worker_looks_for_a_tracer_provider_at_most_once_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked: list[object] = []

    def unconfigured() -> object:
        looked.append(None)
        return trace.ProxyTracerProvider()

    monkeypatch.setattr(trace, "get_tracer_provider", unconfigured)
    _look_up_the_provider_again(monkeypatch)
    for job_id in range(1000):
        with awa.tracing.attempt_span(job_id, "work", "default", 1, {}) as span:
            assert span is None  # nullcontext: no span at all
    assert len(looked) == 1
    monkeypatch.setattr(awa.tracing._Provider, "next_check", 0.0)  # a second later
    awa.tracing.attempt_span(1, "work", "default", 1, {})
    assert len(looked) == 2


def test_each_attempt_runs_in_a_child_of_the_span_that_inserted_the_job(
    spans: InMemorySpanExporter,
) -> None:
    async def story() -> None:
        _, _, [client] = memory_clients()
        tracer = trace.get_tracer("app")

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            with tracer.start_as_current_span("send"):
                if job.args.fail:
                    raise ValueError("bad address")

        with tracer.start_as_current_span("request") as request:
            done = await client.insert(Work())
            failing = await client.insert(Work(fail=True), max_attempts=1)
        traceparent = done.metadata["traceparent"]
        context = request.get_span_context()
        assert traceparent.startswith(f"00-{context.trace_id:032x}-{context.span_id:016x}-")
        untraced = await client.insert(Work())
        assert "traceparent" not in untraced.metadata  # no span around this insert
        await client.start([("default", 2)])
        for job in (done, untraced):
            await reaches(client, job.id, S.COMPLETED)
        await reaches(client, failing.id, S.FAILED)
        await client.shutdown()

        finished = spans.get_finished_spans()
        attempts = [s for s in finished if s.name == "awa.job work"]
        assert len(attempts) == 3
        by_job = {s.attributes["messaging.message.id"]: s for s in attempts}  # type: ignore[index]
        child = by_job[str(done.id)]
        assert child.parent is not None
        assert (child.context.trace_id, child.parent.span_id) == (
            context.trace_id,
            context.span_id,
        )
        assert child.kind is trace.SpanKind.CONSUMER
        assert by_job[str(untraced.id)].parent is None  # a root span of its own
        [send] = [s for s in finished if s.name == "send" and s.parent == child.context]
        assert send.context.trace_id == context.trace_id
        failed = by_job[str(failing.id)]
        assert failed.status.status_code is StatusCode.ERROR
        assert child.status.status_code is not StatusCode.ERROR

    run(story)


def test_a_traceparent_the_caller_gives_is_kept(spans: InMemorySpanExporter) -> None:
    async def story() -> None:
        _, _, [client] = memory_clients()
        given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        with trace.get_tracer("app").start_as_current_span("request"):
            job = await client.insert(Work(), metadata={"traceparent": given})
        assert job.metadata["traceparent"] == given

    run(story)


def test_every_job_of_a_batch_carries_the_span_that_inserted_it(
    spans: InMemorySpanExporter,
) -> None:
    async def story() -> None:
        _, _, [client] = memory_clients()
        given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        before = await client.insert(Work())  # its shape's request is kept, untraced
        assert "traceparent" not in before.metadata
        with trace.get_tracer("app").start_as_current_span("request") as request:
            jobs = await client.insert_many(
                [
                    Work(),
                    Work(fail=True),
                    awa.InsertSpec(args=Work(), metadata={"team": "a"}),
                    awa.InsertSpec(args=Work(), metadata={"traceparent": given}),
                ]
            )
        context = request.get_span_context()
        ours = f"00-{context.trace_id:032x}-{context.span_id:016x}-"
        parents = [job.metadata["traceparent"] for job in jobs]
        assert [parent.startswith(ours) for parent in parents] == [True, True, True, False]
        assert len(set(parents[:3])) == 1
        assert parents[3] == given
        assert jobs[2].metadata["team"] == "a"
        [untraced] = await client.insert_many([Work()])
        assert "traceparent" not in untraced.metadata

    run(story)
