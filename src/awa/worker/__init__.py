"""A worker process: ``awa worker APP`` runs one (``awa.cli.worker`` reads its command line
and environment), and ``run_worker`` runs one from code.

=================  ==========================================================================
module             does
=================  ==========================================================================
``app``            loads ``module:attribute`` naming the application's client
``settings``       ``WorkerSettings``: the queues and everything else the worker was told
``run``            ``run_worker``: start, serve, stop on a signal
``probes``         ``/healthz`` and ``/readyz`` on the worker's event loop
``prometheus``     ``/metrics`` for Prometheus (the ``metrics`` extra)
``log_output``     the log on stderr, as text or JSON
=================  ==========================================================================
"""

from awa.worker.app import load_app
from awa.worker.errors import WorkerError
from awa.worker.log_output import JsonFormatter, TextFormatter, configure_logging
from awa.worker.run import run_worker
from awa.worker.settings import WorkerSettings

__all__ = [
    "JsonFormatter",
    "TextFormatter",
    "WorkerError",
    "WorkerSettings",
    "configure_logging",
    "load_app",
    "run_worker",
]
