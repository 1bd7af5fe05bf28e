"""Which handler runs which kind of job."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from awa.domain import ValidationError
from awa.domain.validation import check_kind, check_queue
from awa.runtime.kinds import JobKind, declared_kind
from awa.runtime.serialization import default_kind

__all__ = ["Task", "TaskRegistry"]


@attrs.frozen
class Task:
    kind: str
    queue: str
    args_type: type[Any]
    handler: Callable[..., Any]
    # decided once here: the runtime asks for every job it starts
    is_async: bool = attrs.field(init=False)

    @is_async.default
    def _is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.handler)


def _agreed(name: str, given: str | None, declared: str | None, args_type: type) -> str | None:
    """The task's ``name`` (kind or queue): as given, else as declared; both must agree, or
    producers (which read the declaration) and this worker would part ways."""
    if given is None:
        return declared
    checked = check_kind(given) if name == "kind" else check_queue(given)
    if declared is not None and checked != declared:
        raise ValidationError(
            f"{args_type.__name__} is declared with {name} {declared!r} (@awa.job_kind);"
            f" its task cannot take {name} {checked!r}"
        )
    return checked


class TaskRegistry:
    def __init__(self) -> None:
        self._by_kind: dict[str, Task] = {}
        self._by_type: dict[type[Any], Task] = {}
        #: tasks added so far: what producers resolved from the registry before may be stale
        self.additions = 0

    def add(
        self,
        args_type: type[Any],
        handler: Callable[..., Any],
        *,
        queue: str | None = None,
        kind: str | None = None,
    ) -> Task:
        """The handler of ``args_type`` jobs; kind and queue default to what
        ``@awa.job_kind`` declared on ``args_type``, and may not contradict it."""
        declared = declared_kind(args_type) or JobKind()
        task = Task(
            kind=_agreed("kind", kind, declared.kind, args_type) or default_kind(args_type),
            queue=_agreed("queue", queue, declared.queue, args_type) or "default",
            args_type=args_type,
            handler=handler,
        )
        if task.kind in self._by_kind:
            raise ValidationError(f"kind {task.kind!r} already has a handler")
        self._by_kind[task.kind] = task
        self._by_type.setdefault(args_type, task)
        self.additions += 1
        return task

    def for_kind(self, kind: str) -> Task | None:
        return self._by_kind.get(kind)

    def for_args(self, args: object) -> Task | None:
        return self._by_type.get(type(args))

    def all(self) -> list[Task]:
        return list(self._by_kind.values())

    def queues(self) -> set[str]:
        return {task.queue for task in self._by_kind.values()}

    def check_workable(self, queues: Sequence[str]) -> None:
        """Refuse to work ``queues`` when no task is registered, or when one of them is the
        queue of no task: every job claimed there would fail as an unknown kind."""
        declared = self.queues()
        if not declared:
            raise ValidationError(
                "no task is registered: add a handler with @client.task(ArgsType, queue=...)"
                " before starting workers"
            )
        missing = [queue for queue in queues if queue not in declared]
        if missing:
            raise ValidationError(
                f"no task is registered on queue {missing[0]!r}: its jobs would fail as unknown"
                f" kinds (tasks are registered on {', '.join(sorted(declared))})"
            )
