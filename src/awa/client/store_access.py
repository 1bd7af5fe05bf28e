"""The clients' calls on the store that are more than the port's verb: a capability asked for
(insert on the caller's connection, migrate, close), or an argument checked first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from awa.adapters.registry import open_store
from awa.client.requests import InsertSpec, Requests
from awa.domain import Job as JobRecord
from awa.domain import (
    JobState,
    NewJob,
    OnConflict,
    Resolution,
    Unique,
    ValidationError,
)
from awa.domain.validation import check_state, shown
from awa.ports import (
    ClaimStore,
    Closes,
    InsertsOnConnection,
    Migrates,
)
from awa.runtime.config import QueueConfig, queue_config_of

__all__ = [
    "QueueSpec",
    "StoreAccess",
    "check_max_args_bytes",
    "open_client_store",
    "queue_configs",
]

#: a queue to work: ``(name, concurrency)``, a ``QueueConfig``, or upstream's dict
#: (``{"name": q, "max_workers": 10, ...}``, ``awa.runtime.config.queue_config_of``)
QueueSpec = tuple[str, int] | QueueConfig | Mapping[str, Any]


def open_client_store(url: str | None, store: ClaimStore | None) -> ClaimStore:
    if (url is None) == (store is None):
        raise ValidationError("give either a store URL or store=..., not both or neither")
    if store is not None:
        return store
    assert url is not None
    return open_store(url)


def check_max_args_bytes(value: object) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValidationError(
            f"max_args_bytes must be a positive integer or None, got {shown(value)}"
        )
    return value


def queue_configs(queues: Sequence[QueueSpec], settings: Mapping[str, Any]) -> list[QueueConfig]:
    configs = []
    for spec in queues:
        if isinstance(spec, QueueConfig):
            configs.append(spec)
            continue
        if isinstance(spec, Mapping):  # the start settings apply to it, as to a pair
            configs.append(queue_config_of(spec, settings))
            continue
        if not (isinstance(spec, tuple) and len(spec) == 2):
            raise ValidationError(
                "queues are (name, concurrency) pairs, QueueConfig values or dicts,"
                f" got {shown(spec)}"
            )
        name, concurrency = spec
        configs.append(QueueConfig(queue=name, concurrency=concurrency, **settings))
    names = [c.queue for c in configs]
    if len(set(names)) != len(names):
        raise ValidationError(f"a queue is listed twice: {names}")
    return configs


class StoreAccess:
    """Every store call of the clients, once, as plain synchronous methods: the async client
    runs them off the event loop, the sync client calls them."""

    def __init__(self, store: ClaimStore, requests: Requests):
        self.store = store
        self.requests = requests

    def on_connection(self) -> InsertsOnConnection:
        if not isinstance(self.store, InsertsOnConnection):
            raise ValidationError(
                f"{type(self.store).__name__} cannot insert on a connection of yours (conn=)"
            )
        return self.store

    def insert(
        self, jobs: list[NewJob], conn: Any = None, on_conflict: OnConflict = "raise"
    ) -> list[JobRecord]:
        if conn is None:
            return self.store.insert(jobs, on_conflict=on_conflict)
        return self.on_connection().insert_on(conn, jobs, on_conflict=on_conflict)

    def cancel_by_unique_key(
        self,
        args: Any,
        *,
        unique: Unique,
        kind: str | None = None,
        queue: str | None = None,
        run_at: datetime | None = None,
    ) -> JobRecord | None:
        if unique is None:
            raise ValidationError("cancel_by_unique_key needs unique=awa.Unique(...)")
        spec = InsertSpec(args=args, kind=kind, queue=queue, run_at=run_at, unique=unique)
        return self.store.cancel_by_unique_key(self.requests.new_job(spec))

    # -- set-up -------------------------------------------------------------------------------
    def migrate(self) -> None:
        if isinstance(self.store, Migrates):
            self.store.migrate()

    def close(self) -> None:
        if isinstance(self.store, Closes):
            self.store.close()

    # -- operators ----------------------------------------------------------------------------
    def list_jobs(
        self,
        *,
        state: JobState | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        tag: str | None = None,
        before_id: int | None = None,
    ) -> list[JobRecord]:
        """The port's ``list_jobs``, ``state`` given by its name or its value."""
        checked = check_state(state) if state is not None else None
        return self.store.list_jobs(
            state=checked, kind=kind, queue=queue, limit=limit, tag=tag, before_id=before_id
        )

    def count_jobs(
        self,
        *,
        state: JobState | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> int:
        checked = check_state(state) if state is not None else None
        return self.store.count_jobs(state=checked, kind=kind, queue=queue)

    def resolve(self, callback_id: str, resolution: Resolution) -> JobRecord:
        return self.store.resolve_callback(callback_id, resolution)
