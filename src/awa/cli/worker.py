"""``awa worker APP``: run a worker process for the client ``APP`` names (``module:attribute``).

Every setting comes from its option, else its ``AWA_*`` environment variable, else its
default; ``OPTIONS`` is the one table of all three (``docs/cli.md`` lists it). The process
itself is ``awa.worker.run_worker``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from awa.cli.arguments import Commands, command, on_off, port, positive, seconds
from awa.cli.session import Refused, Session
from awa.domain.defaults import DEADLINE_S, HEARTBEAT_INTERVAL_S, STALENESS_S
from awa.runtime.config import CONCURRENCY_DEFAULT
from awa.worker import WorkerSettings, configure_logging, load_app, run_worker
from awa.worker.settings import ENDPOINT_HOST_DEFAULT, SHUTDOWN_TIMEOUT_S

__all__ = ["APP_ENV", "OPTIONS", "Option", "add_parser", "settings_from", "worker"]

#: where APP comes from when the command line does not give it
APP_ENV = "AWA_APP"
LOG_LEVELS = ("debug", "info", "warning", "error")


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        word = text.strip().lower()
        if word not in allowed:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(allowed)}, got {text!r}")
        return word

    return parse


def queue_spec(text: str) -> tuple[str, int | None]:
    """``NAME`` or ``NAME=CONCURRENCY``."""
    name, sep, size = text.partition("=")
    if not name.strip():
        raise argparse.ArgumentTypeError(f"a queue is NAME or NAME=CONCURRENCY, got {text!r}")
    return name.strip(), positive(size) if sep else None


def _queues(text: str) -> list[tuple[str, int | None]]:
    """``AWA_QUEUES``: ``email=8,media`` (commas or spaces between queues)."""
    return [queue_spec(part) for part in text.replace(",", " ").split()]


@attrs.frozen
class Option:
    """One setting: its option, its environment variable, how to read it, and its help."""

    flag: str
    env: str
    parse: Callable[[str], Any]
    help: str
    metavar: str
    field: str  # of ``WorkerSettings``

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option(
        "--queue",
        "AWA_QUEUES",
        queue_spec,
        "a queue to work, NAME or NAME=CONCURRENCY; repeat for more (default: every queue a"
        " task is registered on; $AWA_QUEUES: email=8,media)",
        "NAME[=N]",
        "queues",
    ),
    Option(
        "--concurrency",
        "AWA_CONCURRENCY",
        positive,
        f"handlers at once on each queue given without =N (default {CONCURRENCY_DEFAULT})",
        "N",
        "concurrency",
    ),
    Option(
        "--global-max-workers",
        "AWA_GLOBAL_MAX_WORKERS",
        positive,
        "share N handler slots among the queues by their min_workers and weight, each queue at"
        " most its concurrency (default: each queue has its own; docs/weighted-queues.md)",
        "N",
        "global_max_workers",
    ),
    Option(
        "--deadline-duration",
        "AWA_DEADLINE_DURATION",
        seconds,
        f"seconds an attempt may run, 0 for no limit (default {DEADLINE_S:g})",
        "S",
        "deadline_duration",
    ),
    Option(
        "--dlq",
        "AWA_DLQ",
        on_off,
        "store the DLQ routing of these queues (default: leave what `awa queue config` set)",
        "on|off",
        "dlq",
    ),
    Option(
        "--heartbeat-interval",
        "AWA_HEARTBEAT_INTERVAL",
        seconds,
        f"seconds between heartbeats (default {HEARTBEAT_INTERVAL_S:g})",
        "S",
        "heartbeat_interval",
    ),
    Option(
        "--heartbeat-staleness",
        "AWA_HEARTBEAT_STALENESS",
        seconds,
        f"seconds without a heartbeat before an attempt is presumed dead (default {STALENESS_S:g})",
        "S",
        "heartbeat_staleness",
    ),
    Option(
        "--poll-interval",
        "AWA_POLL_INTERVAL",
        seconds,
        "seconds between claims when no wake-up arrives (default 1)",
        "S",
        "poll_interval",
    ),
    Option(
        "--shutdown-timeout",
        "AWA_SHUTDOWN_TIMEOUT",
        seconds,
        "after SIGTERM, seconds running handlers may take before their attempts are released"
        f" (default {SHUTDOWN_TIMEOUT_S:g})",
        "S",
        "shutdown_timeout",
    ),
    Option(
        "--log-level",
        "AWA_LOG_LEVEL",
        _choice(*LOG_LEVELS),
        "info: failures, rescues and the worker's own life; debug: every attempt (default info)",
        "|".join(LOG_LEVELS),
        "log_level",
    ),
    Option(
        "--log-format",
        "AWA_LOG_FORMAT",
        _choice("text", "json"),
        "json: one object per line, each record's fields as keys (default text)",
        "text|json",
        "log_format",
    ),
    Option(
        "--metrics-port",
        "AWA_METRICS_PORT",
        port,
        "serve Prometheus metrics at /metrics on this port (needs awa[metrics])",
        "PORT",
        "metrics_port",
    ),
    Option(
        "--health-port",
        "AWA_HEALTH_PORT",
        port,
        "serve /healthz (alive) and /readyz (connected and claiming) on this port",
        "PORT",
        "health_port",
    ),
    Option(
        "--host",
        "AWA_HOST",
        str,
        f"address the metrics and health endpoints listen on (default {ENDPOINT_HOST_DEFAULT}:"
        " this machine only; 0.0.0.0 opens them to the network, as a container needs for its"
        " probes and scrapes)",
        "ADDR",
        "host",
    ),
)


def add_parser(commands: Commands) -> None:
    p = command(
        commands,
        "worker",
        "run a worker process for your application's client (module:attribute)",
        worker,
        common=False,
    )
    p.add_argument(
        "app",
        nargs="?",
        metavar="APP",
        help=f"module:attribute naming an awa AsyncClient or Client, or a function returning"
        f" one (default: ${APP_ENV})",
    )
    for option in OPTIONS:
        p.add_argument(
            option.flag,
            type=option.parse,
            metavar=option.metavar,
            help=option.help,
            action="append" if option.dest == "queue" else "store",
        )


def settings_from(given: argparse.Namespace, environ: Mapping[str, str]) -> WorkerSettings:
    """Each setting from the command line, else its environment variable, else its
    default; a variable that does not read is refused naming it."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        value = getattr(given, option.dest, None)
        text = environ.get(option.env, "").strip()
        if value is None and text:
            reader = _queues if option.dest == "queue" else option.parse
            try:
                value = reader(text)
            except argparse.ArgumentTypeError as exc:
                raise Refused(f"${option.env}: {exc}") from None
        if value is not None:
            values[option.field] = value
    return WorkerSettings(**values)


def worker(args: argparse.Namespace, session: Session) -> int:
    if args.database_url:  # given before the command: `awa --database-url URL worker`
        raise Refused(
            "awa worker works on the store of the client APP names: give that client its URL"
            " (for example from $AWA_DATABASE_URL), not --database-url"
        )
    app = args.app or session.environ.get(APP_ENV, "").strip()
    if not app:
        raise Refused(f"name the application's client: awa worker module:attribute (or ${APP_ENV})")
    settings = settings_from(args, session.environ)
    configure_logging(settings.log_level, settings.log_format, session.stderr)
    client = load_app(app)
    return asyncio.run(run_worker(client, settings))
