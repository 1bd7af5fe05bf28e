"""A worker's metrics through OpenTelemetry's metrics API (``pip install 'awa[metrics]'``).

``Metrics`` is an observer (``awa.runtime.observe``): give it to ``start(..., observers=[...])``
and configure a meter provider as you would for any OpenTelemetry metrics, or run
``awa worker --metrics-port 9464`` to serve them to Prometheus. The instruments, with their
Prometheus names (the exporter adds the unit and ``_total``):

=================================== ===================================== =======================
instrument                          Prometheus                            attributes
=================================== ===================================== =======================
``awa.attempts`` (counter)          ``awa_attempts_total``                outcome, kind, queue
``awa.handler.duration`` (hist., s) ``awa_handler_duration_seconds``      outcome, kind, queue
``awa.pickup.latency`` (hist., s)   ``awa_pickup_latency_seconds``        queue
``awa.claim.size`` (histogram)      ``awa_claim_size``                    queue
``awa.rescues`` (counter)           ``awa_rescues_total``                 cause, queue
``awa.finishes.stale`` (counter)    ``awa_finishes_stale_total``          reason, queue
``awa.jobs`` (gauge)                ``awa_jobs``                          queue, state
``awa.queue.oldest_age`` (gauge, s) ``awa_queue_oldest_age_seconds``      queue
``awa.dlq.depth`` (gauge)           ``awa_dlq_depth``                     queue
``awa.maintenance.leader`` (gauge)  ``awa_maintenance_leader``            (none)
=================================== ===================================== =======================

The outcomes are ``awa.runtime.observe.Ending``'s values. Pickup latency is how long a job
waited to be claimed once due (``attempted_at - run_at``, on the store's clock). The queue
gauges are read by the maintenance leader alone, once per maintenance round, so a fleet
reports each queue once: the other workers report none, and a worker that loses the
leadership stops reporting. ``awa.maintenance.leader`` is 1 in the process that leads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from awa.domain import Job, JobState
from awa.ports import QueueStats, Rescued
from awa.runtime.observe import AttemptEnd, Ending, MaintenanceReport, Observer

__all__ = ["DURATION_BUCKETS_S", "Metrics"]

try:
    from opentelemetry import metrics as otel
except ImportError as missing:  # pragma: no cover - the metrics extra is not installed
    raise ImportError("awa.metrics needs OpenTelemetry: pip install 'awa[metrics]'") from missing

#: histogram buckets for the durations, in seconds: from a millisecond to an hour
DURATION_BUCKETS_S = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    300.0, 900.0, 3600.0,
)  # fmt: skip
_CLAIM_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


class Metrics(Observer):
    """Records a worker's events on the instruments above, from ``meter_provider`` (the
    global one by default)."""

    wants_queue_stats = True

    def __init__(self, meter_provider: otel.MeterProvider | None = None) -> None:
        provider = meter_provider or otel.get_meter_provider()
        meter = provider.get_meter("awa")
        self._attempts = meter.create_counter(
            "awa.attempts", unit="{attempt}", description="Attempts ended, by outcome"
        )
        self._handler = meter.create_histogram(
            "awa.handler.duration",
            unit="s",
            description="How long handlers ran",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
        )
        self._pickup = meter.create_histogram(
            "awa.pickup.latency",
            unit="s",
            description="How long a due job waited to be claimed",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
        )
        self._claims = meter.create_histogram(
            "awa.claim.size",
            unit="{job}",
            description="Jobs taken per claim",
            explicit_bucket_boundaries_advisory=_CLAIM_BUCKETS,
        )
        self._rescues = meter.create_counter(
            "awa.rescues", unit="{attempt}", description="Attempts ended by maintenance, by cause"
        )
        self._stale = meter.create_counter(
            "awa.finishes.stale",
            unit="{attempt}",
            description="Outcomes refused because the attempt no longer owned its job",
        )
        meter.create_observable_gauge(
            "awa.jobs", [self._jobs], unit="{job}", description="Jobs per queue and state"
        )
        meter.create_observable_gauge(
            "awa.queue.oldest_age",
            [self._oldest],
            unit="s",
            description="Age of the oldest available job per queue",
        )
        meter.create_observable_gauge(
            "awa.dlq.depth", [self._dlq], unit="{job}", description="Dead-letter entries per queue"
        )
        meter.create_observable_gauge(
            "awa.maintenance.leader",
            [self._leader],
            description="1 in the process that leads maintenance",
        )
        self._measured: Sequence[QueueStats] = ()
        self._measured_at: datetime | None = None
        self._leading = False
        # one attributes mapping per (outcome, kind, queue), made once: a busy worker records
        # thousands of attempts a second over a handful of combinations
        self._labels: dict[tuple[str, str, str], dict[str, str]] = {}

    # -- events -------------------------------------------------------------------------------
    def attempt_ended(self, end: AttemptEnd) -> None:
        key = (end.ending.value, end.kind, end.queue)
        labels = self._labels.get(key)
        if labels is None:
            labels = self._labels[key] = {"outcome": key[0], "kind": end.kind, "queue": end.queue}
        self._attempts.add(1, labels)
        self._handler.record(end.handler_s, labels)
        if end.ending is Ending.STALE and end.stale_reason is not None:
            self._stale.add(1, {"reason": end.stale_reason.value, "queue": end.queue})

    def claimed(self, queue: str, jobs: Sequence[Job], now: datetime) -> None:
        labels = {"queue": queue}
        self._claims.record(len(jobs), labels)
        for job in jobs:
            if job.attempted_at is not None:
                waited_s = (job.attempted_at - job.run_at).total_seconds()
                self._pickup.record(max(waited_s, 0.0), labels)

    def maintained(self, report: MaintenanceReport, rescued: Sequence[Rescued]) -> None:
        for item in rescued:
            cause = item.cause.dlq_reason.value
            self._rescues.add(1, {"cause": cause, "queue": item.job.queue})

    def leadership_changed(self, owner: str, leading: bool) -> None:
        self._leading = leading
        if not leading:  # the new leader reports the queues now
            self._measured, self._measured_at = (), None

    def queues_measured(self, stats: Sequence[QueueStats], now: datetime) -> None:
        self._measured, self._measured_at = stats, now

    def worker_stopped(self, owner: str, released: int) -> None:
        self.leadership_changed(owner, False)

    # -- the gauges' callbacks (run by the exporter when it collects) ---------------------------
    def _jobs(self, _: Any) -> Iterable[otel.Observation]:
        for stats in self._measured:
            for state in JobState:
                count = stats.counts.get(state, 0)
                yield otel.Observation(count, {"queue": stats.queue, "state": state.value})

    def _oldest(self, _: Any) -> Iterable[otel.Observation]:
        measured_at = self._measured_at
        for stats in self._measured:
            oldest = stats.oldest_available_at
            age_s = 0.0
            if oldest is not None and measured_at is not None:
                age_s = max((measured_at - oldest).total_seconds(), 0.0)
            yield otel.Observation(age_s, {"queue": stats.queue})

    def _dlq(self, _: Any) -> Iterable[otel.Observation]:
        for stats in self._measured:
            yield otel.Observation(stats.dlq_depth, {"queue": stats.queue})

    def _leader(self, _: Any) -> Iterable[otel.Observation]:
        yield otel.Observation(1 if self._leading else 0)
