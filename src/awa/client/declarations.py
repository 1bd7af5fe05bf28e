"""What a client declares before it starts: the handlers of its kinds and its periodic
schedules. The same for both clients, which share the registry and the schedules."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from awa.client.requests import InsertSpec, Requests
from awa.domain import (
    MissedFirePolicy,
    Schedule,
    Unique,
    ValidationError,
)
from awa.domain.defaults import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
)
from awa.runtime.registry import TaskRegistry
from awa.runtime.runtime import Runtime

__all__ = ["Declarations"]

F = TypeVar("F", bound=Callable[..., Any])


class Declarations(abc.ABC):
    registry: TaskRegistry
    _requests: Requests
    _schedules: dict[str, Schedule]

    @property
    @abc.abstractmethod
    def runtime(self) -> Runtime | None:
        """The workers this client started, until it shuts them down."""

    def task(
        self, args_type: type[Any], *, queue: str | None = None, kind: str | None = None
    ) -> Callable[[F], F]:
        """Register the decorated function as the handler of ``args_type`` jobs; queue and
        kind default to the ``@awa.job_kind`` declaration, else ``default`` and the kind
        named after the class (``SendEmail`` -> ``send_email``)."""

        def register(handler: F) -> F:
            self.registry.add(args_type, handler, queue=queue, kind=kind)
            return handler

        return register

    def periodic(
        self,
        name: str,
        cron: str,
        args: Any,
        *,
        timezone: str = "UTC",
        missed_fire_policy: MissedFirePolicy = "coalesce",
        kind: str | None = None,
        queue: str | None = None,
        priority: int = DEFAULT_PRIORITY,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        unique: Unique | None = None,
        concurrency_key: str | None = None,
        ordering_key: str | None = None,
    ) -> Schedule:
        """Insert ``args`` as a job at every time ``cron`` names (5 fields, or 6 with seconds
        first) in ``timezone``. Call it before ``start()``, which stores the schedule;
        registering is additive and idempotent, and whichever process leads maintenance fires
        it. A fire whose ``unique`` key is held is skipped. See ``docs/periodic-jobs.md``."""
        if self.runtime is not None:
            raise ValidationError("register periodic jobs before start()")
        spec = InsertSpec(
            args=args,
            kind=kind,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            tags=tags,
            metadata=metadata,
            unique=unique,
            concurrency_key=concurrency_key,
            ordering_key=ordering_key,
        )
        schedule = self._requests.schedule(name, cron, spec, timezone, missed_fire_policy)
        self._schedules[schedule.name] = schedule
        return schedule
