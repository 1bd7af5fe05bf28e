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
``awa.claims.throttled`` (counter)  ``awa_claims_throttled_total``        queue, reason
``awa.jobs`` (gauge)                ``awa_jobs``                          queue, state
``awa.queue.oldest_age`` (gauge, s) ``awa_queue_oldest_age_seconds``      queue
``awa.dlq.depth`` (gauge)           ``awa_dlq_depth``                     queue
``awa.maintenance.leader`` (gauge)  ``awa_maintenance_leader``            (none)
=================================== ===================================== =======================

The outcomes are ``awa.runtime.observe.Ending``'s values. A ``kind`` label is the name of a
kind this worker has a handler for, and a ``queue`` label the name of a queue it works or one
of its tasks is registered on; every other kind and queue (job data: a producer can make up
any number) shares the one value ``UNHANDLED``, so junk cannot fill the exporter's cardinality
limit and push the real series into its overflow. Rescues keep their queue's name: only jobs
some worker claimed are rescued, so their queues are ones a worker of the fleet works.

``awa.claims.throttled`` counts the jobs a claim left waiting because a flow limit held them
back (``docs/flow-control.md``), by the first reason that held each: ``concurrency``,
``key_concurrency``, ``ordering``, ``rate`` or ``key_rate``. A job waiting through several
claims is counted by each, so read it as a rate: how hard the limits are pushing back (on
PostgreSQL a keyed claim counts one job per key its limit holds back: a lower bound).

Pickup latency is how long a job waited to be claimed once due (``attempted_at - run_at``, on
the store's clock). The queue gauges are read by the maintenance leader alone, once per
maintenance round, so a fleet reports each queue once: the other workers report none, and a
worker that loses the leadership stops reporting. ``awa.maintenance.leader`` is 1 in the
process that leads.

What it costs a busy worker. A call into the OpenTelemetry SDK costs about ten microseconds
(it cleans and hashes the attributes every time), a seventh of all a no-op job costs a worker,
so the hot path makes few:

* the counters are counted here, in a dictionary, and handed over as observable counters
  when an exporter collects: exact;
* each histogram series records every observation while it sees at most
  ``HISTOGRAM_RECORDS_PER_S`` a second, and every k-th one when busier (k set about once a
  second from the rate just seen). The distribution and its quantiles stay right; the
  histogram's own ``_count`` and ``_sum`` then cover the recorded sample, so count attempts
  with ``awa_attempts_total``.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from awa.domain import Job, JobState
from awa.ports import QueueStats, Rescued
from awa.runtime.observe import AttemptEnd, Ending, MaintenanceReport, Observer

__all__ = ["DURATION_BUCKETS_S", "HISTOGRAM_RECORDS_PER_S", "UNHANDLED", "Metrics"]

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
#: each histogram series records every observation up to about this rate, every k-th above
HISTOGRAM_RECORDS_PER_S = 500
#: the ``kind`` of every kind no handler of this worker takes, and the ``queue`` of every queue
#: it neither works nor has a task on; no kind or queue can be named so (names start with a
#: letter, digit or underscore and have no parentheses), so a real one never shares it
UNHANDLED = "(unhandled)"


_ATTEMPT_LABELS = ("outcome", "kind", "queue")


def _observed(
    counts: Counter[tuple[str, ...]], labels: tuple[str, ...]
) -> Callable[[Any], Iterable[otel.Observation]]:
    """An observable counter's callback: each count so far, with its key as ``labels``."""

    def observe(_: Any) -> Iterable[otel.Observation]:
        for key, count in list(counts.items()):
            yield otel.Observation(count, dict(zip(labels, key, strict=True)))

    return observe


class _Series:
    """One histogram series: records every ``every``-th observation, with ``every`` chosen
    at the end of each window (about a second) so that about ``per_s`` a second are
    recorded."""

    __slots__ = ("_every", "_histogram", "_labels", "_per_s", "_seen", "_window_at")

    def __init__(self, histogram: otel.Histogram, labels: dict[str, str], per_s: int) -> None:
        self._histogram = histogram
        self._labels = labels
        self._per_s = per_s
        self._every = 1
        self._seen = 0
        self._window_at = time.monotonic()

    def record(self, value: float) -> None:
        if self.due():
            self._histogram.record(value, self._labels)

    def due(self) -> bool:
        """Count one observation; whether it is one to record (then call ``record_now``)."""
        self._seen += 1
        due = self._seen % self._every == 0
        now = time.monotonic()
        # a window ends after a second's worth at the current pace, or after a second
        if self._seen >= self._per_s * self._every or now - self._window_at >= 1.0:
            rate_per_s = self._seen / max(now - self._window_at, 1e-3)
            self._every = max(1, math.ceil(rate_per_s / self._per_s))
            self._seen, self._window_at = 0, now
        return due

    def record_now(self, value: float) -> None:
        self._histogram.record(value, self._labels)


@attrs.frozen
class _QueueGauges:
    """What the queue gauges report for one ``queue`` label: the queues that share it summed
    (their oldest available job the oldest of all)."""

    queue: str
    counts: Mapping[JobState, int]
    dlq_depth: int
    oldest_available_at: datetime | None

    @classmethod
    def of(cls, stats: Sequence[QueueStats], label: Callable[[str], str]) -> list[_QueueGauges]:
        by_label: dict[str, list[QueueStats]] = {}
        for one in stats:
            by_label.setdefault(label(one.queue), []).append(one)
        gauges = []
        for queue, group in by_label.items():
            counts: Counter[JobState] = Counter()
            for one in group:
                counts.update(one.counts)
            oldest = [one.oldest_available_at for one in group if one.oldest_available_at]
            depth = sum(one.dlq_depth for one in group)
            gauges.append(cls(queue, counts, depth, min(oldest) if oldest else None))
        return gauges


class Metrics(Observer):
    """Records a worker's events on the instruments above, from ``meter_provider`` (the
    global one by default)."""

    wants_queue_stats = True

    def __init__(
        self,
        meter_provider: otel.MeterProvider | None = None,
        *,
        histogram_records_per_s: int = HISTOGRAM_RECORDS_PER_S,
    ) -> None:
        meter = (meter_provider or otel.get_meter_provider()).get_meter("awa")
        self._per_s = histogram_records_per_s
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
        # counted here, handed over when collected
        self._attempts: Counter[tuple[str, ...]] = Counter()  # (outcome, kind, queue)
        self._rescues: Counter[tuple[str, ...]] = Counter()  # (cause, queue)
        self._stale: Counter[tuple[str, ...]] = Counter()  # (reason, queue)
        self._throttled: Counter[tuple[str, ...]] = Counter()  # (queue, reason)
        for name, counts, labels, description in (
            ("awa.attempts", self._attempts, _ATTEMPT_LABELS, "Attempts ended, by outcome"),
            ("awa.rescues", self._rescues, ("cause", "queue"), "Attempts rescued, by cause"),
            (
                "awa.finishes.stale",
                self._stale,
                ("reason", "queue"),
                "Outcomes refused because the attempt no longer owned its job",
            ),
        ):
            meter.create_observable_counter(
                name, [_observed(counts, labels)], unit="{attempt}", description=description
            )
        meter.create_observable_counter(
            "awa.claims.throttled",
            [_observed(self._throttled, ("queue", "reason"))],
            unit="{job}",
            description="Jobs a claim left waiting because a flow limit held them back",
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
        self._measured: Sequence[_QueueGauges] = ()
        # the names labels may carry; anything else is UNHANDLED (``worker_handles``)
        self._kinds: frozenset[str] = frozenset()
        self._queues: frozenset[str] = frozenset()
        self._measured_at: datetime | None = None
        self._leading = False
        # one series per label set, made once: a busy worker ends thousands of attempts a
        # second over a handful of (outcome, kind, queue) combinations
        self._handler_series: dict[tuple[str, str, str], _Series] = {}
        self._queue_series: dict[str, tuple[_Series, _Series]] = {}  # pickup, claim size

    # -- the labels job data may feed --------------------------------------------------------
    def worker_handles(self, kinds: Mapping[str, str]) -> None:
        self._kinds = frozenset(kinds)
        self._queues = self._queues | frozenset(kinds.values())

    def worker_started(self, owner: str, queues: Sequence[str]) -> None:
        self._queues = self._queues | frozenset(queues)

    def _queue(self, queue: str) -> str:
        return queue if queue in self._queues else UNHANDLED

    # -- events -------------------------------------------------------------------------------
    def attempt_ended(self, end: AttemptEnd) -> None:
        kind = end.kind if end.kind in self._kinds else UNHANDLED
        queue = end.queue if end.queue in self._queues else UNHANDLED
        key = (end.ending.value, kind, queue)
        self._attempts[key] += 1
        series = self._handler_series.get(key)
        if series is None:
            labels = {"outcome": key[0], "kind": kind, "queue": queue}
            series = self._handler_series[key] = _Series(self._handler, labels, self._per_s)
        series.record(end.handler_s)
        if end.ending is Ending.STALE and end.stale_reason is not None:
            self._stale[(end.stale_reason.value, queue)] += 1

    def claimed(self, queue: str, jobs: Sequence[Job], now: datetime) -> None:
        queue = self._queue(queue)
        found = self._queue_series.get(queue)
        if found is None:
            labels = {"queue": queue}
            found = self._queue_series[queue] = (
                _Series(self._pickup, labels, self._per_s),
                _Series(self._claims, labels, self._per_s),
            )
        pickup, claims = found
        claims.record(len(jobs))
        for job in jobs:  # the wait is worked out only for the observations recorded
            if pickup.due() and job.attempted_at is not None:
                pickup.record_now(max((job.attempted_at - job.run_at).total_seconds(), 0.0))

    def claims_held_back(self, queue: str, held: Mapping[str, int]) -> None:
        label = self._queue(queue)
        for reason, count in held.items():
            self._throttled[(label, reason)] += count

    def maintained(self, report: MaintenanceReport, rescued: Sequence[Rescued]) -> None:
        for item in rescued:  # of jobs some worker claimed: their queues are worked ones
            self._rescues[(item.cause.dlq_reason.value, item.job.queue)] += 1

    def leadership_changed(self, owner: str, leading: bool) -> None:
        self._leading = leading
        if not leading:  # the new leader reports the queues now
            self._measured, self._measured_at = (), None

    def queues_measured(self, stats: Sequence[QueueStats], now: datetime) -> None:
        self._measured, self._measured_at = _QueueGauges.of(stats, self._queue), now

    def worker_stopped(self, owner: str, released: int) -> None:
        self.leadership_changed(owner, False)

    # -- the observable instruments' callbacks (run by the exporter when it collects) ---------
    def _jobs(self, _: Any) -> Iterable[otel.Observation]:
        for gauges in self._measured:
            for state in JobState:
                count = gauges.counts.get(state, 0)
                yield otel.Observation(count, {"queue": gauges.queue, "state": state.value})

    def _oldest(self, _: Any) -> Iterable[otel.Observation]:
        measured_at = self._measured_at
        for gauges in self._measured:
            oldest = gauges.oldest_available_at
            age_s = 0.0
            if oldest is not None and measured_at is not None:
                age_s = max((measured_at - oldest).total_seconds(), 0.0)
            yield otel.Observation(age_s, {"queue": gauges.queue})

    def _dlq(self, _: Any) -> Iterable[otel.Observation]:
        for gauges in self._measured:
            yield otel.Observation(gauges.dlq_depth, {"queue": gauges.queue})

    def _leader(self, _: Any) -> Iterable[otel.Observation]:
        yield otel.Observation(1 if self._leading else 0)
