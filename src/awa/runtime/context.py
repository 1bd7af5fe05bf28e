"""The job as a handler sees it: ``awa.Job[T]`` (async handlers) and ``awa.SyncJob[T]``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Generic, TypeVar

import attrs

from awa.domain import (
    CallbackToken,
    ErrorEntry,
    JobNotFound,
    JobState,
    Lease,
    WaitForCallback,
)
from awa.domain import Job as JobRecord
from awa.domain.defaults import CALLBACK_TIMEOUT_S
from awa.ports import (
    Applied,
    ClaimStore,
    Clock,
    Finish,
    Heartbeat,
    Stale,
    StaleReason,
    WriteResult,
)
from awa.runtime.attempts import Attempt, AttemptEnded
from awa.runtime.store_calls import StoreCalls

__all__ = ["HandlerServices", "Job", "SyncJob"]

T = TypeVar("T")


@attrs.frozen
class HandlerServices:
    """What a running handler's job reaches beyond its attempt: the store (directly from a
    handler thread, through ``store_call`` from the loop), the clock, and a wait that a
    callback's answer can cut short."""

    store: ClaimStore
    clock: Clock
    store_call: StoreCalls
    wait: Callable[[asyncio.Event, float], Awaitable[None]]


class _JobView(Generic[T]):
    """Read-only fields of the attempt's job, and the buffered writes a handler may make."""

    def __init__(self, attempt: Attempt, args: T, services: HandlerServices) -> None:
        self._attempt = attempt
        self._services = services
        self.args: T = args

    @property
    def _record(self) -> JobRecord:
        return self._attempt.record

    @property
    def id(self) -> int:
        return self._record.id

    @property
    def kind(self) -> str:
        return self._record.kind

    @property
    def queue(self) -> str:
        return self._record.queue

    @property
    def priority(self) -> int:
        return self._record.priority

    @property
    def attempt(self) -> int:
        return self._record.attempt

    @property
    def max_attempts(self) -> int:
        return self._record.max_attempts

    @property
    def run_lease(self) -> int:
        return self._record.run_lease

    @property
    def created_at(self) -> datetime:
        return self._record.created_at

    @property
    def state(self) -> JobState:
        return self._record.state

    @property
    def tags(self) -> tuple[str, ...]:
        return self._record.tags

    @property
    def metadata(self) -> dict[str, Any]:
        """The job's metadata with every ``update_metadata`` of this attempt merged in,
        written yet or not."""
        written, mine = self._record.metadata, self._attempt.metadata_set
        return {**written, **mine} if mine else written

    @property
    def errors(self) -> tuple[ErrorEntry, ...]:
        return self._record.errors

    @property
    def run_at(self) -> datetime:
        return self._record.run_at

    @property
    def deadline_at(self) -> datetime | None:
        return self._record.deadline_at

    @property
    def finalized_at(self) -> datetime | None:
        return self._record.finalized_at

    @property
    def progress(self) -> dict[str, Any] | None:
        """The handler's latest ``set_progress``, written yet or not; else the job's."""
        latest = self._attempt.latest_progress
        return latest if latest is not None else self._record.progress

    @property
    def lease(self) -> Lease:
        return self._attempt.lease

    def is_cancelled(self) -> bool:
        """True once an operator cancelled the job or this attempt lost it."""
        return self._attempt.cancelled.is_set() or self._attempt.ended

    def set_progress(self, percent: float, message: str | None = None) -> None:
        """Buffered; written with the next heartbeat or with the outcome, or now by
        ``flush_progress``. ``percent`` is clamped to 0..100."""
        self._attempt.set_progress(percent, message)

    def update_metadata(self, patch: Mapping[str, Any]) -> None:
        """Buffered and merged into the job's metadata with the next write."""
        self._attempt.update_metadata(patch)

    # -- flushing, shared by both flavours --------------------------------------------------
    def _flush_beat(self) -> Heartbeat:
        progress, metadata = self._attempt.take_buffers()
        return Heartbeat(self.lease, progress, metadata)

    def _unflushed(self, beat: Heartbeat) -> None:
        """The write failed: the buffers go back for the next heartbeat."""
        self._attempt.restore_buffers(
            dict(beat.progress) if beat.progress else None,
            dict(beat.metadata) if beat.metadata else None,
        )

    def _flushed(self, result: WriteResult) -> None:
        if isinstance(result, Stale):
            self._attempt.end(cancelled=result.reason is StaleReason.CANCELLED)
            raise AttemptEnded(f"attempt {self.lease} no longer owns job {self.id}")
        written = result.job  # a heartbeat writes these three fields and no others
        self._attempt.record = attrs.evolve(
            self._record,
            heartbeat_at=written.heartbeat_at,
            progress=written.progress,
            metadata=written.metadata,
        )

    # -- callbacks, shared by both flavours -------------------------------------------------
    def _registered(self, result: Applied | Stale) -> CallbackToken:
        if isinstance(result, Stale):
            self._attempt.end(cancelled=result.reason is StaleReason.CANCELLED)
            raise AttemptEnded(f"attempt {self.lease} no longer owns job {self.id}")
        record = result.job
        self._attempt.record = record
        assert record.callback_id is not None
        assert record.callback_timeout_at is not None
        return CallbackToken(record.callback_id, self.lease, record.callback_timeout_at)

    def _parked(self, result: Applied | Stale) -> None:
        if isinstance(result, Applied):
            self._attempt.record = result.job
            return
        if result.reason is not StaleReason.CALLBACK_RESOLVED:
            self._attempt.end(cancelled=result.reason is StaleReason.CANCELLED)
            raise AttemptEnded(f"attempt {self.lease} no longer owns job {self.id}")

    def _resumed(self, record: JobRecord | None) -> tuple[bool, Any]:
        """Whether the wait is over, and the payload when it was resumed."""
        if record is None or record.run_lease != self.lease.run_lease:
            raise AttemptEnded(f"job {self.id} moved on while waiting for its callback")
        if record.state is JobState.WAITING_EXTERNAL:
            return False, None
        if record.state is JobState.RUNNING and record.callback_id is None:
            self._attempt.started(record, self._services.clock.now())  # the resume restarts it
            self._attempt.waiting_callback = False
            return True, record.callback_result
        raise AttemptEnded(f"job {self.id} was {record.state.value} by its callback")

    def _get(self) -> JobRecord | None:
        try:
            return self._services.store.get_job(self.id)
        except JobNotFound:
            return None

    def _park_finish(self, token: CallbackToken) -> Finish:
        if token.lease != self.lease:
            raise AttemptEnded(f"callback {token.callback_id} belongs to attempt {token.lease}")
        self._attempt.waiting_callback = True
        self._attempt.callback_signal.clear()
        progress, metadata = self._attempt.take_buffers()
        return Finish(self.lease, WaitForCallback(token), progress, metadata)


class Job(_JobView[T]):
    """Given to async handlers."""

    async def flush_progress(self) -> None:
        """Write the buffered progress and metadata now (a heartbeat of this attempt, fenced
        by its lease), instead of with the next heartbeat. Raises ``AttemptEnded`` if the
        attempt no longer owns its job."""
        beat = self._flush_beat()
        try:
            [result] = await self._services.store_call(self._services.store.heartbeat, [beat])
        except BaseException:
            self._unflushed(beat)
            raise
        self._flushed(result)

    async def register_callback(self, timeout: float = CALLBACK_TIMEOUT_S) -> CallbackToken:
        """Create a callback the external system answers by id (``token.callback_id``)."""
        result = await self._services.store_call(
            self._services.store.register_callback, self.lease, timeout_s=timeout
        )
        return self._registered(result)

    async def wait_for_callback(self, token: CallbackToken) -> Any:
        """Park the job until the external system resumes it; returns the resume payload.
        Raises ``AttemptEnded`` if the callback completes, fails or retries the job instead,
        or the attempt is rescued or cancelled meanwhile."""
        attempt = self._attempt
        attempt.callback_wakeup = asyncio.Event()
        finish = self._park_finish(token)
        [result] = await self._services.store_call(self._services.store.finish, [finish])
        self._parked(result)
        while True:
            # cleared before the read, not after: a resume heard while the read is on its way
            # must still wake the wait below (cleared after, it was lost until the next poll)
            attempt.callback_wakeup.clear()
            done, payload = self._resumed(await self._services.store_call(self._get))
            if done:
                return payload
            await self._services.wait(attempt.callback_wakeup, attempt.config.poll_interval_s)


class SyncJob(_JobView[T]):
    """Given to sync handlers, which run in a thread: the callback methods block."""

    def flush_progress(self) -> None:
        """``Job.flush_progress``, blocking."""
        beat = self._flush_beat()
        try:
            [result] = self._services.store.heartbeat([beat])
        except BaseException:
            self._unflushed(beat)
            raise
        self._flushed(result)

    def register_callback(self, timeout: float = CALLBACK_TIMEOUT_S) -> CallbackToken:
        return self._registered(
            self._services.store.register_callback(self.lease, timeout_s=timeout)
        )

    def wait_for_callback(self, token: CallbackToken) -> Any:
        attempt = self._attempt
        [result] = self._services.store.finish([self._park_finish(token)])
        self._parked(result)
        while True:
            done, payload = self._resumed(self._get())
            if done:
                return payload
            attempt.callback_signal.wait(timeout=attempt.config.poll_interval_s)
            attempt.callback_signal.clear()
