"""Insert requests: an application's args and options made into validated ``NewJob`` values.

The kind, queue and options of an item come from the call, else the kind's ``@awa.job_kind``
declaration, else its registered task, else the defaults. Items of one shape (``_shape``)
are made from the first one's request, so a batch resolves and checks its options once;
the producer's trace context is carried in each request's metadata.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Literal
from zoneinfo import ZoneInfo

import attrs

from awa.domain import (
    MissedFirePolicy,
    NewJob,
    Schedule,
    SerializationError,
    Unique,
    ValidationError,
)
from awa.domain.defaults import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
)
from awa.domain.validation import check_args_size, shown
from awa.runtime.kinds import JobKind, KeyOption, declared_kind, key_of, key_text
from awa.runtime.registry import TaskRegistry
from awa.runtime.serialization import default_kind, dump_args
from awa.tracing import current_trace_context, with_trace_context

__all__ = ["STREAM_CHUNK_JOBS", "InsertSpec", "Requests", "Returning", "returns_ids"]


@attrs.frozen(kw_only=True)
class InsertSpec:
    """One job for ``insert_many``: args plus any insert option. An option left ``None`` comes
    from the kind's ``@awa.job_kind`` declaration, else from its registered task, else the
    default (queue ``default``, priority 2, 25 attempts)."""

    args: Any
    kind: str | None = None
    queue: str | None = None
    priority: int | None = None
    max_attempts: int | None = None
    run_at: datetime | None = None
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] | None = None
    unique: Unique | None = None
    #: flow control's keys (``docs/flow-control.md``); ``None``: the kind's declared key, if any;
    #: bytes are read as UTF-8 (upstream passes ``b"account-42"``), the key stored is a text
    concurrency_key: str | bytes | None = None
    ordering_key: str | bytes | None = None


_UNDECLARED = JobKind()  # a kind without @awa.job_kind: no option declared


def returns_ids(returning: object) -> bool:
    if returning not in ("jobs", "ids"):
        raise ValidationError(f"returning takes 'jobs' or 'ids', got {shown(returning)}")
    return returning == "ids"


def _first(option: int | None, declared: int | None, default: int) -> int:
    if option is not None:
        return option
    return declared if declared is not None else default


def _key(name: str, given: str | bytes | None, declared: KeyOption, args: Any) -> str | None:
    return key_text(name, given) if given is not None else key_of(declared, args, name)


def _shape(spec: InsertSpec) -> tuple[Any, ...] | None:
    """What ``Requests.new_job`` makes of ``spec`` besides its args: items of equal shape
    differ only in args. ``None`` for an item made on its own: metadata, a unique key or a
    flow-control key (made per job, or given per item), or an option of a type other than the
    plain one, where equal values need not mean an equal job (``True == 1``, one instant in
    two zones, a string of tags, a zone of a type that may not hash)."""
    if (
        spec.metadata is not None
        or spec.unique is not None
        or spec.concurrency_key is not None
        or spec.ordering_key is not None
    ):
        return None
    declared = declared_kind(type(spec.args))
    if declared is not None and declared.keys_per_job:
        return None
    tags = spec.tags
    if type(tags) not in _TAG_LISTS or (tags and not all(type(tag) is str for tag in tags)):
        return None
    run_at = spec.run_at
    zone: Any = None
    if run_at is not None:
        if type(run_at) is not datetime:
            return None
        zone = run_at.tzinfo
        if type(zone) is timezone:  # equal offsets, so equal zones, may differ in name
            zone = (zone, zone.tzname(None))
        elif type(zone) is not ZoneInfo:  # ZoneInfo is equal only to itself
            return None
    kind, queue, priority, max_attempts = spec.kind, spec.queue, spec.priority, spec.max_attempts
    if not (
        type(kind) in _PLAIN_OPTION_TYPES
        and type(queue) in _PLAIN_OPTION_TYPES
        and type(priority) in _PLAIN_OPTION_TYPES
        and type(max_attempts) in _PLAIN_OPTION_TYPES
    ):
        return None
    return (type(spec.args), kind, queue, priority, max_attempts, run_at, zone, tuple(tags))


_TAG_LISTS = frozenset({tuple, list})
#: shapes whose first request ``Requests`` keeps; past that it starts again
_SHAPES_KEPT_MAX = 256
#: what ``insert_many`` returns: the inserted ``Job`` values, or only their ids
Returning = Literal["jobs", "ids"]
#: jobs per chunk of a streamed insert: small enough that making the next chunk overlaps the
#: database taking in the last, large enough that a chunk costs far more than handing it over
STREAM_CHUNK_JOBS = 200
_PLAIN_OPTION_TYPES = frozenset({type(None), str, int})


def _check_items(items: object) -> None:
    if type(items) is not list and (  # a list, the common case, without two ABC checks
        isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence)
    ):
        raise ValidationError(f"insert_many takes a list of args, got {type(items).__name__}")


class Requests:
    """Every insert request of a client, made and checked before anything is written."""

    def __init__(self, registry: TaskRegistry, max_args_bytes: int | None):
        self.registry = registry
        self.max_args_bytes = max_args_bytes
        # each shape's request made outside any span, kept from call to call as long as no
        # task is added (``_firsts_for``): one-by-one inserts make theirs from it
        self._firsts: dict[tuple[Any, ...], NewJob] = {}
        self._firsts_additions = registry.additions

    def new_job(self, spec: InsertSpec, trace_context: Mapping[str, str] | None = None) -> NewJob:
        """``spec`` as a validated request; ``trace_context`` is the call's
        (``current_trace_context()`` when not given)."""
        args = spec.args
        is_mapping = isinstance(args, Mapping)
        declared = None if is_mapping else declared_kind(type(args))
        task = self.registry.for_args(args)
        if task is None and spec.kind is not None:
            task = self.registry.for_kind(spec.kind)
        if spec.kind is not None:
            kind = spec.kind
        elif task is not None:
            kind = task.kind
        elif declared is not None and declared.kind is not None:
            kind = declared.kind
        elif is_mapping:
            raise ValidationError("a dict of args needs kind=...")
        else:
            kind = default_kind(type(args))
        # an explicit option is checked as given ("" included); a task agrees with the
        # declaration (TaskRegistry.add), so their order below only matters without one
        declared = declared or _UNDECLARED
        if spec.queue is not None:
            queue = spec.queue
        else:
            queue = declared.queue or (task.queue if task is not None else "default")
        job = NewJob(
            kind=kind,
            args=dump_args(args),
            queue=queue,
            priority=_first(spec.priority, declared.priority, DEFAULT_PRIORITY),
            max_attempts=_first(spec.max_attempts, declared.max_attempts, DEFAULT_MAX_ATTEMPTS),
            run_at=spec.run_at,
            tags=spec.tags,  # NewJob refuses a string, which tuple() would split into letters
            metadata=with_trace_context(
                spec.metadata if spec.metadata is not None else {}, trace_context
            ),
            unique=spec.unique,
            concurrency_key=_key(
                "concurrency_key", spec.concurrency_key, declared.concurrency_key, args
            ),
            ordering_key=_key("ordering_key", spec.ordering_key, declared.ordering_key, args),
        )
        check_args_size(job.args_json(), self.max_args_bytes)
        return job

    def new_jobs(self, items: Sequence[Any | InsertSpec]) -> list[NewJob]:
        """Every item checked before any is written: one bad item refuses the batch.

        Items of one shape (``_shape``) are made from the first one's request
        (``NewJob.with_args``): kind, queue and options are resolved and checked once, and
        each further item, in this call or a later one, has only its args serialized and
        checked."""
        _check_items(items)
        context = current_trace_context()  # one span inserts the whole batch
        return self._new_jobs(items, context, self._firsts_for(context), numbered=len(items) > 1)

    def streamable(self, items: Sequence[Any | InsertSpec]) -> bool:
        """Whether a store may write ``items`` while they are still being made
        (``BulkInserts``): none holds a unique key, whose holder must be looked for first.
        Whether it does is the store's to decide."""
        return not any(isinstance(item, InsertSpec) and item.unique is not None for item in items)

    def new_job_chunks(self, items: Sequence[Any | InsertSpec]) -> Iterator[list[NewJob]]:
        """``new_jobs`` of ``items`` a chunk at a time, each made when the store asks for it
        (``BulkInserts``): a bad item raises from the chunk that holds it. ``items`` itself is
        checked now, as ``new_jobs`` checks it."""
        _check_items(items)
        context = current_trace_context()  # now, in the caller's context, not when first asked
        firsts = self._firsts_for(context)
        numbered = len(items) > 1  # a single insert's refusal names no position
        return (
            self._new_jobs(
                items[start : start + STREAM_CHUNK_JOBS],
                context,
                firsts,
                first_index=start,
                numbered=numbered,
            )
            for start in range(0, len(items), STREAM_CHUNK_JOBS)
        )

    def _new_jobs(
        self,
        items: Sequence[Any | InsertSpec],
        context: Mapping[str, str],
        firsts: dict[tuple[Any, ...], NewJob],
        *,
        first_index: int = 0,
        numbered: bool = True,
    ) -> list[NewJob]:
        """The requests for ``items``; a refusal names the item's position in the caller's
        list (``first_index``: the position of ``items[0]`` there) unless not ``numbered``,
        as for a single insert."""
        jobs = []
        for index, item in enumerate(items):
            try:
                jobs.append(self._new_item(item, context, firsts))
            except (ValidationError, SerializationError) as exc:
                if not numbered or type(exc) not in (ValidationError, SerializationError):
                    raise
                raise type(exc)(f"item {first_index + index}: {exc}") from exc.__cause__
        return jobs

    def _new_item(
        self, item: Any, context: Mapping[str, str], firsts: dict[tuple[Any, ...], NewJob]
    ) -> NewJob:
        spec = item if isinstance(item, InsertSpec) else InsertSpec(args=item)
        shape = _shape(spec)
        first = firsts.get(shape) if shape is not None else None
        if first is None:
            job = self.new_job(spec, context)
            if shape is not None:
                if len(firsts) >= _SHAPES_KEPT_MAX:
                    firsts.clear()
                firsts[shape] = job.with_args({})  # the shape, not this item's args
            return job
        job = first.with_args(dump_args(spec.args))
        check_args_size(job.args_json(), self.max_args_bytes)
        return job

    def _firsts_for(self, trace_context: Mapping[str, str]) -> dict[tuple[Any, ...], NewJob]:
        """Where ``new_jobs`` finds and keeps the first request of each shape: this call's
        own inside a span (its context is in every request), else the ones kept from call
        to call, forgotten when a task is added (it can change a shape's kind or queue)."""
        if trace_context:
            return {}
        if self._firsts_additions != self.registry.additions:
            self._firsts, self._firsts_additions = {}, self.registry.additions
        return self._firsts

    def schedule(
        self,
        name: str,
        cron: str,
        spec: InsertSpec,
        timezone: str,
        missed_fire_policy: MissedFirePolicy,
    ) -> Schedule:
        if spec.run_at is not None:
            raise ValidationError("a periodic job runs at its fire time: give it no run_at")
        return Schedule(
            name=name,
            cron=cron,
            job=self.new_job(spec),
            timezone=timezone,
            missed_fire_policy=missed_fire_policy,
        )
