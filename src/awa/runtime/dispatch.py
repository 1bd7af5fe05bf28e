"""Handler dispatch: a claimed job becomes a running handler, and what the handler returns or
raises becomes an outcome waiting in the attempt table to be written.

Async handlers run as tasks on the loop; sync handlers in a thread pool sized to the queues'
concurrency. A job whose kind no handler takes, or whose args do not fit the handler's type,
fails at once (terminal) without running anything.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from awa.domain import Fail, Outcome, SerializationError
from awa.domain import Job as JobRecord
from awa.ports import Finish, StaleReason
from awa.runtime import django_connections
from awa.runtime.attempt_table import AttemptTable, PendingOutcome
from awa.runtime.attempts import Attempt, AttemptEnded
from awa.runtime.config import QueueConfig
from awa.runtime.context import HandlerServices, Job, SyncJob
from awa.runtime.observe import AttemptEnd, Ending, Observers
from awa.runtime.outcomes import outcome_from_exception, outcome_from_return
from awa.runtime.registry import Task, TaskRegistry
from awa.runtime.serialization import load_args
from awa.tracing import attempt_span, tracing_active

__all__ = ["Dispatch", "ended_without_write"]

log = logging.getLogger("awa.runtime")


def _span(attempt: Attempt) -> AbstractContextManager[object]:
    """The attempt's trace span, child of the inserting span (``awa.tracing``)."""
    job = attempt.claimed
    return attempt_span(job.id, job.kind, job.queue, job.attempt, job.metadata)


def ended_without_write(
    attempt: Attempt,
    ending: Ending,
    job: JobRecord | None = None,
    *,
    stale_reason: StaleReason | None = None,
) -> AttemptEnd:
    """An attempt that ended without an outcome of its handler's written: by the worker's own
    hand (dropped, released), or cancelled while its handler ran."""
    claimed = attempt.claimed
    error = job.errors[-1].error if job is not None and job.errors else None
    return AttemptEnd(
        lease=attempt.lease,
        kind=claimed.kind,
        queue=claimed.queue,
        attempt=claimed.attempt,
        max_attempts=claimed.max_attempts,
        ending=ending,
        handler_s=time.monotonic() - attempt.started_monotonic,
        error=error,
        stale_reason=stale_reason,
        job=job,
    )


class Dispatch:
    def __init__(
        self,
        registry: TaskRegistry,
        table: AttemptTable,
        services: HandlerServices,
        *,
        handler_threads: int,
        on_outcome: Callable[[], None],
        observers: Observers,
    ) -> None:
        """``on_outcome()`` is called when an outcome is waiting to be written."""
        self.registry = registry
        self.table = table
        self.services = services
        self.observers = observers
        self._on_outcome = on_outcome
        self._threads = ThreadPoolExecutor(handler_threads, thread_name_prefix="awa-handler")
        self._django_shared_thread = django_connections.SharedThreadCloser()

    def start(self, config: QueueConfig, record: JobRecord, now: datetime) -> Attempt:
        """Run the handler of a job this process just claimed."""
        task = self.registry.for_kind(record.kind)
        attempt = Attempt(record, config, is_async=task is not None and task.is_async, now=now)
        self.table.add(attempt)
        self._run(attempt, task)
        return attempt

    def admit(self, config: QueueConfig, record: JobRecord, now: datetime) -> Attempt:
        """Hold a job claimed ahead of a free slot; ``start_waiting`` runs it when one frees."""
        task = self.registry.for_kind(record.kind)
        attempt = Attempt(record, config, is_async=task is not None and task.is_async, now=now)
        self.table.add_waiting(attempt)
        return attempt

    def start_waiting(self, queue: str) -> bool:
        """Run the oldest attempt waiting for a slot of ``queue``, if there is one."""
        attempt = self.table.next_waiting(queue)
        if attempt is None:
            return False
        attempt.started_monotonic = time.monotonic()  # its handler's time starts now
        self._run(attempt, self.registry.for_kind(attempt.record.kind))
        return True

    def _run(self, attempt: Attempt, task: Task | None) -> None:
        record = attempt.record
        if task is None:
            known = ", ".join(sorted(t.kind for t in self.registry.all())) or "none"
            error = (
                f"UnknownJobKind: no handler for kind {record.kind!r} (this worker has: {known})"
            )
            self.done(attempt, Fail(error, terminal=True))
            return
        try:
            args = load_args(record.args, task.args_type)
        except SerializationError as exc:
            self.done(attempt, Fail(f"SerializationError: {exc}", terminal=True))
            return
        loop = asyncio.get_running_loop()
        if task.is_async:
            attempt.future = loop.create_task(self._run_async(attempt, task, args))
        else:
            future = loop.run_in_executor(self._threads, self._run_sync, attempt, task, args)
            attempt.future = future
            future.add_done_callback(functools.partial(self._sync_done, attempt))

    async def _run_async(self, attempt: Attempt, task: Task, args: Any) -> None:
        attempt.handler_started = True
        if attempt.ended:  # lost its job before the task's first step (Attempt.end)
            self.done(attempt, None)
            return
        outcome: Outcome | None
        try:
            job = Job(attempt, args, self.services)
            if tracing_active():
                with _span(attempt):
                    returned = await task.handler(job)
            else:  # not even an empty span: this runs once per job
                returned = await task.handler(job)
            outcome = outcome_from_return(returned)
        except (AttemptEnded, asyncio.CancelledError):
            outcome = None
        except BaseException as exc:  # a handler's panic must not take the runtime down
            outcome = outcome_from_exception(exc)
        self._django_shared_thread.handler_ended()
        self.done(attempt, outcome)

    def _run_sync(self, attempt: Attempt, task: Task, args: Any) -> Outcome | None:
        try:
            with _span(attempt), django_connections.recycled():
                returned = task.handler(SyncJob(attempt, args, self.services))
            return outcome_from_return(returned)
        except AttemptEnded:
            return None
        except BaseException as exc:  # e.g. SystemExit in a handler thread: a panic
            return outcome_from_exception(exc)

    def _sync_done(self, attempt: Attempt, future: asyncio.Future[Outcome | None]) -> None:
        self.done(attempt, None if future.cancelled() else future.result())

    def done(self, attempt: Attempt, outcome: Outcome | None) -> None:
        """The handler ended: free its slot and, unless the attempt lost its job meanwhile,
        queue its outcome (with the progress and metadata it buffered) to be written."""
        if attempt.dropped:
            return
        self.table.release(attempt)
        if attempt.ended:
            # cancelled while it ran: nothing is written, but it is heard once like any end
            # (a rescued attempt is the leader's to report, and a released one shutdown's)
            if attempt.cancelled.is_set() and self.observers.hears(Ending.CANCELLED):
                ended = ended_without_write(
                    attempt, Ending.CANCELLED, stale_reason=StaleReason.CANCELLED
                )
                self.observers.attempt_ended(ended)
            return
        if outcome is None:
            return
        progress, metadata = attempt.take_buffers()
        finish = Finish(attempt.lease, outcome, progress, metadata, claimed=attempt.claimed)
        handler_s = time.monotonic() - attempt.started_monotonic
        self.table.add_finish(PendingOutcome(finish, attempt.claimed, handler_s))
        self._on_outcome()

    def drop(self, attempt: Attempt) -> None:
        """Give up on a handler past its deadline: cancel it and free its slot, write
        nothing; maintenance counts the attempt as ``hard deadline exceeded``."""
        attempt.end(cancelled=False)
        self.table.release(attempt)
        attempt.dropped = True
        if self.observers.hears(Ending.DROPPED):
            self.observers.attempt_ended(ended_without_write(attempt, Ending.DROPPED))

    def shutdown(self) -> None:
        self._threads.shutdown(wait=False)
