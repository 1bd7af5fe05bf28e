"""What a worker process was told: the queues to work and their settings, how long a
shutdown may take, its log, and where its metrics and health endpoints listen."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from awa.domain.defaults import DEADLINE_S, HEARTBEAT_INTERVAL_S, STALENESS_S
from awa.runtime.config import CONCURRENCY_DEFAULT, QueueConfig

__all__ = ["ENDPOINT_HOST_DEFAULT", "SHUTDOWN_TIMEOUT_S", "WorkerSettings"]

#: how long running handlers may take after SIGTERM before their attempts are released
SHUTDOWN_TIMEOUT_S = 30.0
#: where the metrics and health endpoints listen unless told: this machine only, as ``awa ui``
#: and ``awa callbacks serve`` do, since neither endpoint asks who is calling. A container's
#: probes and scrapes come to its pod's address, so there they are opened on purpose.
ENDPOINT_HOST_DEFAULT = "127.0.0.1"


@attrs.frozen(kw_only=True)
class WorkerSettings:
    """Everything ``awa worker`` was told, with the defaults filled in."""

    queues: Sequence[tuple[str, int | None]] = ()
    concurrency: int = CONCURRENCY_DEFAULT
    global_max_workers: int | None = None
    deadline_duration: float = DEADLINE_S
    dlq: bool | None = None
    heartbeat_interval: float = HEARTBEAT_INTERVAL_S
    heartbeat_staleness: float = STALENESS_S
    poll_interval: float = 1.0
    shutdown_timeout: float = SHUTDOWN_TIMEOUT_S
    log_level: str = "info"
    log_format: str = "text"  # or "json"
    metrics_port: int | None = None
    health_port: int | None = None
    host: str = ENDPOINT_HOST_DEFAULT

    def queue_configs(self, declared: Sequence[str]) -> list[QueueConfig]:
        """The queues to work (those given, else every ``declared`` one), each with the
        per-queue settings."""
        chosen = self.queues or [(name, None) for name in sorted(declared)]
        return [
            QueueConfig(
                queue=name,
                concurrency=size or self.concurrency,
                deadline_duration_s=self.deadline_duration,
                dlq_enabled=self.dlq,
                heartbeat_interval_s=self.heartbeat_interval,
                heartbeat_staleness_s=self.heartbeat_staleness,
                poll_interval_s=self.poll_interval,
            )
            for name, size in chosen
        ]
