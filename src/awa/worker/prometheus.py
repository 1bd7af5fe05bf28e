"""``awa worker --metrics-port``: the worker's OpenTelemetry metrics served to Prometheus.

OpenTelemetry's Prometheus exporter (``PrometheusMetricReader``) feeds ``prometheus-client``'s
registry, and ``prometheus-client`` serves it on a thread of its own at ``/metrics``. The meter
provider becomes the process's global one, so metrics the application records through
OpenTelemetry are served on the same port, with the process metrics ``prometheus-client``
collects (CPU, memory, open files).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from awa.worker.errors import WorkerError

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider

__all__ = ["serve_metrics"]


def serve_metrics(host: str, port: int) -> tuple[MeterProvider, Callable[[], None]]:
    """Start serving ``/metrics`` on ``host:port``; returns the meter provider to record on
    and a function that stops the server."""
    try:
        from opentelemetry import metrics
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
        from prometheus_client import start_http_server
    except ImportError as exc:
        raise WorkerError(
            f"--metrics-port needs the metrics extra (pip install 'awa[metrics]'): {exc}"
        ) from None
    try:
        server, _ = start_http_server(port, addr=host)
    except OSError as exc:
        raise WorkerError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
    provider = MeterProvider(metric_readers=[PrometheusMetricReader()])
    metrics.set_meter_provider(provider)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        provider.shutdown()

    return provider, stop
