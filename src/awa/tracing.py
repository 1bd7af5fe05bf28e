"""Traces that cross the queue: the span that inserts a job is the parent of every attempt.

An insert made inside a valid span stores that span's W3C ``traceparent`` (and
``tracestate``, if any) in the job's metadata, under those names; each attempt then runs its
handler inside a span named ``awa.job KIND`` (kind ``CONSUMER``), child of the stored
context, with the job's id, kind, queue and attempt as attributes. A handler's own spans
become children of that span, and a handler that raises marks it as an error.

This uses OpenTelemetry's API when it is installed (``pip install 'awa[metrics]'``) and does
nothing otherwise. Until the application configures a tracer provider (the SDK's, or any
other) no span is started at all. Whether one is configured is looked up at most once a second
(OpenTelemetry reads an environment variable on every look-up, a few microseconds that a busy
worker pays per job otherwise): a provider set after the worker started is used within a
second, and once set it stays (OpenTelemetry never unsets one).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

__all__ = [
    "TRACEPARENT",
    "TRACESTATE",
    "attempt_span",
    "current_trace_context",
    "tracing_active",
    "with_trace_context",
]

#: the metadata keys an insert stores the inserting span's context under
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

try:
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # pragma: no cover - the metrics extra is not installed
    trace = None  # type: ignore[assignment]
else:
    _PROPAGATOR = TraceContextTextMapPropagator()
    _UNCONFIGURED = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)

_RECHECK_S = 1.0


class _Provider:
    """Whether a tracer provider is configured, as last looked up, and when to look again."""

    configured = False
    next_check = 0.0


def tracing_active() -> bool:
    """Whether attempts get spans: OpenTelemetry is installed and a provider is configured."""
    if trace is None or _Provider.configured:
        return _Provider.configured
    now = time.monotonic()
    if now >= _Provider.next_check:
        _Provider.configured = not isinstance(trace.get_tracer_provider(), _UNCONFIGURED)
        _Provider.next_check = now + _RECHECK_S
    return _Provider.configured


def current_trace_context() -> dict[str, str]:
    """The current span's W3C trace context (``traceparent``, ``tracestate``), or nothing
    when there is no valid span. The same for every job a call inserts: asked once a call."""
    if trace is None or not trace.get_current_span().get_span_context().is_valid:
        return {}
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier


def with_trace_context(
    metadata: Mapping[str, Any], context: Mapping[str, str] | None = None
) -> Mapping[str, Any]:
    """``metadata`` plus ``context`` (by default ``current_trace_context()``), unless the
    caller set a ``traceparent`` of their own."""
    if TRACEPARENT in metadata:
        return metadata
    if context is None:
        context = current_trace_context()
    return {**metadata, **context} if context else metadata


_NO_SPAN: AbstractContextManager[object] = nullcontext()  # reusable: it holds nothing


def attempt_span(
    job_id: int, kind: str, queue: str, attempt: int, metadata: Mapping[str, Any]
) -> AbstractContextManager[object]:
    """The span one attempt's handler runs in (a context manager that does nothing while no
    tracer provider is configured)."""
    if not tracing_active():
        return _NO_SPAN
    carrier = {
        key: value
        for key in (TRACEPARENT, TRACESTATE)
        if isinstance(value := metadata.get(key), str)
    }
    parent = _PROPAGATOR.extract(carrier) if carrier else None
    return trace.get_tracer("awa").start_as_current_span(
        f"awa.job {kind}",
        context=parent,
        kind=trace.SpanKind.CONSUMER,
        attributes={
            "messaging.system": "awa",
            "messaging.destination.name": queue,
            "messaging.message.id": str(job_id),
            "awa.job.kind": kind,
            "awa.job.attempt": attempt,
        },
    )
