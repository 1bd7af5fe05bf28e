"""The verbs both clients share, written once as the async client's: the operator verbs, the
periodic schedules' and the external side of callbacks. Each is one store call, run off the
event loop (``AsyncCalls._call``). ``sync_verbs.py`` is generated from this file by
``tools/async_to_sync.py``: edit this one and run it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from awa.client.calls import AsyncCalls
from awa.client.requests import InsertSpec
from awa.client.store_access import StoreAccess
from awa.domain import (
    CompleteCallback,
    DlqEntry,
    FailCallback,
    JobState,
    ResumeCallback,
    RetryCallback,
    ScheduleRecord,
    Unique,
)
from awa.domain import Job as JobRecord
from awa.domain.defaults import (
    CALLBACK_TIMEOUT_S,
    FAILED_BY_CALLBACK,
)
from awa.ports import (
    ClaimStore,
    QueueSettings,
    QueueStats,
)

__all__ = ["AsyncVerbs"]


class AsyncVerbs(AsyncCalls):
    """The verbs a client shares with its twin, over its ``store`` and ``_ops``."""

    store: ClaimStore
    _ops: StoreAccess

    async def cancel_by_unique_key(
        self,
        args: Any,
        *,
        unique: Unique,
        kind: str | None = None,
        queue: str | None = None,
        run_at: datetime | None = None,
    ) -> JobRecord | None:
        """Cancel the job holding the key that ``insert(args, unique=unique, ...)`` would take
        now; ``None`` when no job holds it."""
        spec = InsertSpec(args=args, kind=kind, queue=queue, run_at=run_at, unique=unique)
        return await self._call(self._ops.cancel_by_unique_key, spec)

    # -- operators ----------------------------------------------------------------------------
    async def get_job(self, job_id: int) -> JobRecord:
        return await self._call(self.store.get_job, job_id)

    async def list_jobs(
        self,
        *,
        state: JobState | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        tag: str | None = None,
        before_id: int | None = None,
    ) -> list[JobRecord]:
        """Jobs outside the dead-letter queue, newest first, holding ``tag`` when given; pass
        the last id of a page as ``before_id`` for the next one."""
        page = {"tag": tag, "before_id": before_id}
        return await self._call(self._ops.list_jobs, state, kind, queue, limit, **page)

    async def count_jobs(
        self,
        *,
        state: JobState | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> int:
        """How many jobs ``list_jobs`` would list with these filters and no limit."""
        return await self._call(self._ops.count_jobs, state, kind, queue)

    async def cancel(self, job_id: int) -> JobRecord:
        return await self._call(self.store.cancel, job_id)

    async def retry(self, job_id: int, *, run_at: datetime | None = None) -> JobRecord:
        """Retry a failed or cancelled job with a fresh attempt budget: now, or at ``run_at``."""
        return await self._call(self.store.retry, job_id, run_at=run_at)

    async def retry_failed(
        self,
        *,
        kind: str | None = None,
        queue: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[JobRecord]:
        """Retry every failed job of a kind and/or queue (``all=True``: every one), now or at
        ``run_at``."""
        return await self._call(
            self.store.retry_failed, queue=queue, kind=kind, all=all, run_at=run_at
        )

    async def discard_failed(
        self, *, kind: str | None = None, queue: str | None = None, all: bool = False
    ) -> int:
        """Delete every failed job of a kind and/or queue (``all=True``: every one)."""
        return await self._call(self.store.discard_failed, queue=queue, kind=kind, all=all)

    async def drain_queue(self, queue: str) -> int:
        """Cancel every job of ``queue`` that no attempt is running; how many."""
        return await self._call(self.store.drain_queue, queue)

    async def pause_queue(self, queue: str) -> None:
        await self._call(self.store.pause_queue, queue)

    async def resume_queue(self, queue: str) -> None:
        await self._call(self.store.resume_queue, queue)

    async def queue_stats(self) -> list[QueueStats]:
        return await self._call(self.store.queue_stats)

    async def configure_queue(
        self,
        queue: str,
        *,
        dlq_enabled: bool | None = None,
        finished_retention_s: float | None = None,
        dlq_retention_s: float | None = None,
        failed_retention_s: float | None = None,
    ) -> QueueSettings:
        """Store ``queue``'s settings for every process that works it; ``None`` leaves a
        setting as it is. Returns them all. The retentions override the maintenance
        leader's ``RuntimeConfig`` defaults for this queue: ``finished_retention_s`` for its
        completed jobs, ``failed_retention_s`` for its failed and cancelled ones outside the
        dead-letter queue, ``dlq_retention_s`` for its dead-letter entries."""
        return await self._call(
            self.store.configure_queue,
            queue,
            dlq_enabled=dlq_enabled,
            finished_retention_s=finished_retention_s,
            dlq_retention_s=dlq_retention_s,
            failed_retention_s=failed_retention_s,
        )

    async def dump_job(self, job_id: int) -> JobRecord:
        """The whole job with its error history, attempt by attempt."""
        return await self._call(self.store.get_job, job_id)

    async def list_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_id: int | None = None,
    ) -> list[DlqEntry]:
        return await self._call(
            self.store.list_dlq, queue=queue, kind=kind, limit=limit, before_id=before_id
        )

    async def retry_from_dlq(self, job_id: int, *, run_at: datetime | None = None) -> JobRecord:
        return await self._call(self.store.retry_from_dlq, job_id, run_at=run_at)

    async def bulk_retry_from_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[JobRecord]:
        return await self._call(
            self.store.bulk_retry_from_dlq, queue=queue, kind=kind, all=all, run_at=run_at
        )

    async def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        return await self._call(self.store.purge_dlq, queue=queue, kind=kind, all=all)

    async def purge_dlq_job(self, job_id: int) -> None:
        await self._call(self.store.purge_dlq_job, job_id)

    # -- periodic schedules -------------------------------------------------------------------
    async def list_periodic(self) -> list[ScheduleRecord]:
        """Every stored schedule with its next and last fire, by name."""
        return await self._call(self.store.list_schedules)

    async def pause_periodic(self, name: str) -> ScheduleRecord:
        return await self._call(self.store.set_schedule_paused, name, True)

    async def resume_periodic(self, name: str) -> ScheduleRecord:
        """Fires again from now on (what it missed while paused is not made up)."""
        return await self._call(self.store.set_schedule_paused, name, False)

    async def trigger_periodic(self, name: str) -> JobRecord:
        """Insert one run now, outside the schedule's cadence."""
        return await self._call(self.store.trigger_schedule, name)

    async def remove_periodic(self, name: str) -> None:
        await self._call(self.store.remove_schedule, name)

    # -- the external side of callbacks -------------------------------------------------------
    async def complete_external(self, callback_id: str, payload: Any = None) -> JobRecord:
        return await self._call(self._ops.resolve, callback_id, CompleteCallback(payload))

    async def fail_external(self, callback_id: str, error: str = FAILED_BY_CALLBACK) -> JobRecord:
        return await self._call(self._ops.resolve, callback_id, FailCallback(error))

    async def retry_external(self, callback_id: str) -> JobRecord:
        return await self._call(self._ops.resolve, callback_id, RetryCallback())

    async def resume_external(self, callback_id: str, payload: Any = None) -> JobRecord:
        return await self._call(self._ops.resolve, callback_id, ResumeCallback(payload))

    async def heartbeat_callback(
        self, callback_id: str, timeout: float = CALLBACK_TIMEOUT_S
    ) -> JobRecord:
        return await self._call(self.store.heartbeat_callback, callback_id, timeout_s=timeout)
