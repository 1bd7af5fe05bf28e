"""One worker process, start to stop: what ``awa worker`` runs.

It refuses before touching the database when it could not work (no task, a queue no task is
registered on), then proves the database answers (an unreachable one is one line naming host
and port, within the store's connect timeout), starts the metrics and health endpoints it was
asked for, and starts working. The first SIGTERM or SIGINT stops claiming and lets running
handlers finish for up to the shutdown timeout; those still running then are cancelled and
their attempts released, so another worker takes them at once. A second signal exits at once
(code 128 + the signal), leaving what still runs to be rescued. A clean stop exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable

from awa.client import AsyncClient
from awa.ports import Probes
from awa.runtime.observe import Observer
from awa.worker.probes import serve_probes
from awa.worker.settings import WorkerSettings

__all__ = ["STOP_SIGNALS", "run_worker"]

log = logging.getLogger("awa.worker")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Signals:
    """The first stop signal sets ``stop``; the second ends the process at once."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.stop = asyncio.Event()
        self.received: str | None = None

    def __enter__(self) -> _Signals:
        for number in STOP_SIGNALS:
            self.loop.add_signal_handler(number, self._received, number)
        return self

    def __exit__(self, *exc: object) -> None:
        for number in STOP_SIGNALS:
            self.loop.remove_signal_handler(number)

    def _received(self, number: signal.Signals) -> None:
        if self.stop.is_set():
            log.warning(
                "%s again: exiting now; attempts still running will be rescued", number.name
            )
            for handler in logging.getLogger().handlers:
                handler.flush()
            sys.stderr.flush()
            os._exit(128 + number.value)
        self.received = number.name
        self.stop.set()


async def run_worker(client: AsyncClient, settings: WorkerSettings) -> int:
    """Work until a stop signal; returns the exit code (0: a clean stop)."""
    configs = settings.queue_configs(sorted(client.registry.queues()))
    client.registry.check_workable([config.queue for config in configs])
    if isinstance(client.store, Probes):  # an unreachable database: one line, now
        await asyncio.to_thread(client.store.ping)
    stops: list[Callable[[], object]] = []
    host = f"[{settings.host}]" if ":" in settings.host else settings.host  # an IPv6 address
    observers: list[Observer] = []
    try:
        if settings.metrics_port is not None:
            from awa.metrics import Metrics
            from awa.worker.prometheus import serve_metrics

            provider, stop_metrics = serve_metrics(settings.host, settings.metrics_port)
            stops.append(stop_metrics)
            observers.append(Metrics(provider))
            log.info("metrics on http://%s:%d/metrics", host, settings.metrics_port)
        if settings.health_port is not None:
            probes = await serve_probes(client, settings.host, settings.health_port)
            stops.append(probes.close)
            log.info("health on http://%s:%d/healthz and /readyz", host, settings.health_port)
        with _Signals(asyncio.get_running_loop()) as signals:
            await client.start(
                configs, observers=observers, global_max_workers=settings.global_max_workers
            )
            await signals.stop.wait()
            log.info(
                "%s: stopping; running handlers have %gs to finish",
                signals.received,
                settings.shutdown_timeout,
                extra={"signal": signals.received},
            )
            await client.shutdown(timeout=settings.shutdown_timeout)
    finally:
        await client.close()
        for stop in reversed(stops):
            with contextlib.suppress(Exception):
                stop()
    return 0
