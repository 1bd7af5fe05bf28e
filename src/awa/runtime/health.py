"""A worker's health, as ``client.health_check()`` reports it and ``/healthz`` ``/readyz``
serve it: whether the database answers, whether the listener is connected, when each service
last ran without failing, and how many handler slots each queue uses.

*Alive* says the worker's scheduler is running (or it was never started): restarting the
process would not help otherwise. It does not ask the database, so an outage does not make an
orchestrator restart every worker at once. *Ready* says the worker is doing its job now:
started and not shutting down, its database answering, and its listener (if its store has
one) connected.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

import attrs

from awa.domain import AwaError
from awa.ports import ClaimStore, Listens, Probes

__all__ = ["Health", "Slots", "WorkerView", "check_health"]

#: what the store says: why its database did not answer, and whether its listener is up
_StoreAnswer = tuple[str | None, bool | None]


@attrs.frozen
class Slots:
    """Handler slots of one queue in this process."""

    in_use: int
    concurrency: int


@attrs.frozen
class Health:
    database: bool
    #: why the database did not answer (``None`` when it did)
    database_error: str | None
    #: the notification listener is connected; ``None`` when there is none to ask about
    listening: bool | None
    #: workers are started and not shutting down
    working: bool
    #: the worker's scheduling loop runs (or no worker was started in this client)
    scheduler_alive: bool
    #: when each service last ran without failing (the worker's clock); empty without workers
    services: Mapping[str, datetime | None]
    #: handler slots in use per queue; empty without workers
    slots: Mapping[str, Slots]

    @property
    def alive(self) -> bool:
        return self.scheduler_alive

    @property
    def ready(self) -> bool:
        return self.working and self.database and self.listening is not False

    def to_json(self) -> dict[str, Any]:
        """The document ``/healthz`` and ``/readyz`` answer with."""
        return {
            "alive": self.alive,
            "ready": self.ready,
            "database": self.database,
            "database_error": self.database_error,
            "listening": self.listening,
            "working": self.working,
            "services": {
                name: None if at is None else at.isoformat() for name, at in self.services.items()
            },
            "slots": {
                queue: {"in_use": s.in_use, "concurrency": s.concurrency}
                for queue, s in self.slots.items()
            },
        }


class WorkerView(Protocol):
    """What the health check reads of a running worker (``awa.runtime.Runtime``)."""

    @property
    def working(self) -> bool: ...

    @property
    def scheduler_alive(self) -> bool: ...

    def succeeded_at(self) -> dict[str, datetime | None]: ...

    def slots(self) -> dict[str, tuple[int, int]]: ...


def _ask_store(store: ClaimStore, listener_wanted: bool) -> _StoreAnswer:
    """Why the database did not answer (``None`` when it did), and whether the listener is
    connected (``None`` when not asked): a store may take a lock for either, so this runs on
    a thread, never on the event loop."""
    error = None
    if isinstance(store, Probes):
        try:
            store.ping()
        except AwaError as exc:
            error = str(exc) or type(exc).__name__
    listening = None
    if listener_wanted and isinstance(store, Listens):
        listening = store.listening if isinstance(store, Probes) else True
    return error, listening


async def check_health(
    store: ClaimStore,
    worker: WorkerView | None,
    call: Callable[[Callable[[], _StoreAnswer]], Awaitable[_StoreAnswer]],
) -> Health:
    """Ask the store (``call`` runs the blocking questions off the event loop) and read the
    worker, if one runs."""
    working = worker is not None and worker.working
    error, listening = await call(functools.partial(_ask_store, store, working))
    return Health(
        database=error is None,
        database_error=error,
        listening=listening,
        working=working,
        scheduler_alive=worker is None or worker.scheduler_alive,
        services=worker.succeeded_at() if worker is not None else {},
        slots=(
            {q: Slots(used, size) for q, (used, size) in worker.slots().items()}
            if worker is not None
            else {}
        ),
    )
