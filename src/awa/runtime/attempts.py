"""One attempt running in this process: its lease, its buffers, and how to stop it."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from awa.domain import Job as JobRecord
from awa.domain import Lease, ValidationError
from awa.domain.validation import check_json_object
from awa.runtime.config import QueueConfig

__all__ = ["Attempt", "AttemptEnded", "Flag"]


class AttemptEnded(Exception):
    """Raised inside a handler whose attempt no longer owns its job (cancelled, rescued, or
    answered by a callback). Let it propagate: the runtime writes nothing for such attempts."""


class Flag:
    """A flag set once and read from any thread: ``threading.Event``'s ``set``/``is_set``
    without the condition variable nobody waits on (one is made for every job started)."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


class Attempt:
    """Owned by the runtime's event loop; handlers touch only the buffers and flags, which are
    safe to use from a handler thread."""

    def __init__(
        self, record: JobRecord, config: QueueConfig, *, is_async: bool, now: datetime
    ) -> None:
        self.record = record
        self.lease: Lease = record.lease
        self.claimed = record  # the job as claimed (record follows registrations and resumes)
        self.started_monotonic = time.monotonic()
        self.deadline_local: datetime | None = None
        self.started(record, now)
        self.config = config
        self.is_async = is_async
        self.cancelled = Flag()
        self.ended = False  # the lease no longer owns the job: write nothing more
        self.dropped = False  # the runtime gave up on the handler and freed its slot
        self.waiting_slot = False  # claimed ahead: its handler waits for a free slot
        self.handler_started = False  # its async handler's task has taken its first step
        self.waiting_callback = False
        self._callback_signal: threading.Event | None = None
        self.callback_wakeup: asyncio.Event | None = None
        self.future: asyncio.Future[Any] | None = None
        self._lock = threading.Lock()
        self._progress: dict[str, Any] | None = None
        self._metadata: dict[str, Any] = {}
        # what the handler set during this attempt, written or not: its own view of the job
        self.latest_progress: dict[str, Any] | None = None
        self.metadata_set: dict[str, Any] = {}

    def started(self, record: JobRecord, now: datetime) -> None:
        """The store (re)started the attempt's clock: a claim, or a callback's resume.

        ``deadline_at`` is on the store's clock (the database's), ``now`` on this process's;
        hosts need not agree about the time, so the deadline is carried over as the time left
        (``deadline_at - heartbeat_at``, both written by the store in the same statement)
        counted from ``now``."""
        self.record = record
        if record.deadline_at is None or record.heartbeat_at is None:
            self.deadline_local = None
        else:
            self.deadline_local = now + (record.deadline_at - record.heartbeat_at)

    # -- buffered progress and metadata (flushed with heartbeats and with the outcome) --------
    def set_progress(self, percent: float, message: str | None = None) -> None:
        """A percent outside 0..100 is clamped to it (a counter that overshoots is not worth
        failing the attempt for); one that is not a number is refused."""
        if (
            isinstance(percent, bool)
            or not isinstance(percent, (int, float))
            or (isinstance(percent, float) and math.isnan(percent))
        ):
            raise ValidationError(f"progress percent must be a number, got {percent!r}")
        progress: dict[str, Any] = {"percent": min(max(percent, 0), 100)}
        if message is not None:
            progress["message"] = str(message)
        progress = check_json_object("progress", progress)
        with self._lock:
            self._progress = self.latest_progress = progress

    def update_metadata(self, patch: Mapping[str, Any]) -> None:
        checked = check_json_object("metadata", patch)
        with self._lock:
            self._metadata.update(checked)
            self.metadata_set.update(checked)

    def take_buffers(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        with self._lock:
            progress, metadata = self._progress, self._metadata or None
            self._progress, self._metadata = None, {}
        return progress, metadata

    def restore_buffers(
        self, progress: dict[str, Any] | None, metadata: dict[str, Any] | None
    ) -> None:
        """Put back what a failed write took, under anything buffered since."""
        with self._lock:
            if self._progress is None:
                self._progress = progress
            self._metadata = {**(metadata or {}), **self._metadata}

    # -- signals ----------------------------------------------------------------------------
    @property
    def callback_signal(self) -> threading.Event:
        """Set when the callback was answered or the attempt ended (a sync handler waits on
        it); made on first use, most attempts never need one."""
        with self._lock:
            if self._callback_signal is None:
                self._callback_signal = threading.Event()
            return self._callback_signal

    def signal_callback(self) -> None:
        self.callback_signal.set()
        if self.callback_wakeup is not None:
            self.callback_wakeup.set()

    def end(self, *, cancelled: bool) -> None:
        """The attempt lost its job: stop an async handler now; a blocking one keeps its slot
        until it returns, and whatever it returns is dropped."""
        self.ended = True
        if cancelled:
            self.cancelled.set()
        self.signal_callback()
        # a task cancelled before its first step never runs its body, so nothing would free
        # the slot: such a task is left to start, sees the attempt ended and frees it
        if self.is_async and self.future is not None and self.handler_started:
            self.future.cancel()
