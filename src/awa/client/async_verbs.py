"""The verbs both clients share, written once as the async client's: the operator verbs, the
periodic schedules' and the external side of callbacks. Each is one store call, run off the
event loop. A verb that only passes its arguments on is made from the method it calls
(``forward_async``), so its keywords and defaults are the port's (or ``StoreAccess``'s) and
are not written again here; the others call through ``AsyncCalls._call``.
``sync_verbs.py`` is generated from this file by ``tools/async_to_sync.py``: edit this one and
run it.
"""

from __future__ import annotations

from typing import Any

from awa.client.calls import AsyncCalls, forward_async
from awa.client.store_access import StoreAccess
from awa.domain import (
    CompleteCallback,
    FailCallback,
    ResumeCallback,
    RetryCallback,
    ScheduleRecord,
)
from awa.domain import Job as JobRecord
from awa.domain.defaults import (
    CALLBACK_TIMEOUT_S,
    FAILED_BY_CALLBACK,
)
from awa.ports import (
    ClaimStore,
    OperatorStore,
)

__all__ = ["AsyncVerbs"]


class AsyncVerbs(AsyncCalls):
    """The verbs a client shares with its twin, over its ``store`` and ``_ops``."""

    store: ClaimStore
    _ops: StoreAccess

    cancel_by_unique_key = forward_async(
        StoreAccess.cancel_by_unique_key,
        via="_ops",
        doc="""Cancel the job holding the key that ``insert(args, unique=unique, ...)`` would
        take now; ``None`` when no job holds it.""",
    )

    # -- operators ----------------------------------------------------------------------------
    get_job = forward_async(OperatorStore.get_job)
    list_jobs = forward_async(
        StoreAccess.list_jobs,
        via="_ops",
        doc="""Jobs outside the dead-letter queue, newest first, holding ``tag`` when given;
        pass the last id of a page as ``before_id`` for the next one.""",
    )
    count_jobs = forward_async(
        StoreAccess.count_jobs,
        via="_ops",
        doc="How many jobs ``list_jobs`` would list with these filters and no limit.",
    )
    cancel = forward_async(OperatorStore.cancel)
    retry = forward_async(
        OperatorStore.retry,
        doc="Retry a failed or cancelled job with a fresh attempt budget: now, or at ``run_at``.",
    )
    retry_failed = forward_async(
        OperatorStore.retry_failed,
        doc="""Retry every failed job of a kind and/or queue (``all=True``: every one), now or
        at ``run_at``.""",
    )
    discard_failed = forward_async(
        OperatorStore.discard_failed,
        doc="Delete every failed job of a kind and/or queue (``all=True``: every one).",
    )
    drain_queue = forward_async(
        OperatorStore.drain_queue,
        doc="Cancel every job of ``queue`` that no attempt is running; how many.",
    )
    pause_queue = forward_async(OperatorStore.pause_queue)
    resume_queue = forward_async(OperatorStore.resume_queue)
    queue_stats = forward_async(OperatorStore.queue_stats)
    configure_queue = forward_async(
        OperatorStore.configure_queue,
        doc="""Store ``queue``'s settings for every process that works it; ``None`` leaves a
        setting as it is. Returns them all. The retentions override the maintenance
        leader's ``RuntimeConfig`` defaults for this queue: ``finished_retention_s`` for its
        completed jobs, ``failed_retention_s`` for its failed and cancelled ones outside the
        dead-letter queue, ``dlq_retention_s`` for its dead-letter entries.""",
    )

    async def dump_job(self, job_id: int) -> JobRecord:
        """The whole job with its error history, attempt by attempt."""
        return await self._call(self.store.get_job, job_id)

    list_dlq = forward_async(OperatorStore.list_dlq)
    retry_from_dlq = forward_async(OperatorStore.retry_from_dlq)
    bulk_retry_from_dlq = forward_async(OperatorStore.bulk_retry_from_dlq)
    purge_dlq = forward_async(OperatorStore.purge_dlq)
    purge_dlq_job = forward_async(OperatorStore.purge_dlq_job)

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
