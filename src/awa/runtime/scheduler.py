"""The one place a worker waits: which service runs next, and when.

Each service's ``run_once(now)`` does one bounded batch and returns how many seconds until it
wants to run again (``None``: only when woken). The scheduler runs every service that is due
or was woken, then sleeps on the clock until the next one is due or a wake-up arrives; a
simulation drives ``ready``/``run`` itself instead, choosing the order. A service that raises
runs again after a backoff, and its run of failures is logged once, not once per try
(``awa.runtime.service_failures``).

The ``now`` a service is given is this process's clock, for waiting and pacing alone (when to
run again, an async handler's local deadline). The lifecycle's time is the store's: a lease,
heartbeat, deadline or ``run_at`` is stamped by the store with its own clock inside the
statement that writes it, so hosts need not agree about the time. That is why most services
never read ``now``; they take it all the same, so that one scheduler (or a simulation) drives
every service alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

import attrs

from awa.ports import Clock
from awa.runtime.service_failures import FailureEpisode

__all__ = ["Scheduler", "Service"]


class Service(Protocol):
    name: str

    async def run_once(self, now: datetime) -> float | None: ...


@attrs.define
class _Slot:
    """Scheduling state of one service."""

    service: Service
    failures: FailureEpisode
    due_at: datetime | None = None
    woken: bool = False
    task: asyncio.Task[None] | None = None
    succeeded_at: datetime | None = None  # when its last run that did not raise started


class Scheduler:
    def __init__(self, clock: Clock, services: Sequence[Service]) -> None:
        self.clock = clock
        self._slots = {s.name: _Slot(s, FailureEpisode(s.name)) for s in services}
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def attach(self, now: datetime) -> None:
        """Every service is due at once (on the running loop)."""
        self._wakeup = asyncio.Event()
        for slot in self._slots.values():
            slot.due_at = now

    def start(self) -> None:
        self._task = asyncio.create_task(self._schedule(), name="awa-scheduler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def service(self, name: str) -> Service:
        return self._slots[name].service

    def succeeded_at(self) -> dict[str, datetime | None]:
        """When each service's last successful run started (``None``: none yet)."""
        return {name: slot.succeeded_at for name, slot in self._slots.items()}

    @property
    def running(self) -> bool:
        """Whether the scheduling loop runs (started, not stopped, not crashed)."""
        return self._task is not None and not self._task.done()

    @property
    def crashed(self) -> bool:
        """Whether the scheduling loop ended by itself, with an error."""
        task = self._task
        return task is not None and task.done() and not task.cancelled()

    # -- choosing and running ---------------------------------------------------------------
    def ready(self, now: datetime) -> list[str]:
        """Services not running now that were woken or whose time has come."""
        return [
            name
            for name, slot in self._slots.items()
            if slot.task is None
            and (slot.woken or (slot.due_at is not None and slot.due_at <= now))
        ]

    def next_due(self) -> datetime | None:
        """The earliest moment an idle service wants to run."""
        return min(
            (s.due_at for s in self._slots.values() if s.task is None and s.due_at is not None),
            default=None,
        )

    async def run(self, name: str, now: datetime) -> None:
        """One ``run_once`` of a service, then its next due time: measured from when the run
        started, so a slow store call does not stretch the period."""
        slot = self._slots[name]
        slot.woken = False
        try:
            delay_s = await slot.service.run_once(now)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            delay_s = slot.failures.failed(error, now)
        else:
            slot.failures.succeeded(self.clock.now())  # the episode ends when the run does
            slot.succeeded_at = now
        slot.due_at = None if delay_s is None else now + timedelta(seconds=delay_s)

    async def _schedule(self) -> None:
        assert self._wakeup is not None
        while True:
            self._wakeup.clear()
            now = self.clock.now()
            for name in self.ready(now):
                self._slots[name].task = asyncio.create_task(self._run(name, now))
            await self.wait_until(self._wakeup, self.next_due())

    async def _run(self, name: str, now: datetime) -> None:
        try:
            await self.run(name, now)
        finally:
            self._slots[name].task = None
            self._kick()

    async def settle(self, names: Sequence[str] | None = None) -> None:
        """Wait for these services' runs in progress (all by default) to end on their own."""
        slots = self._slots.values() if names is None else [self._slots[n] for n in names]
        running = [s.task for s in slots if s.task is not None]
        await asyncio.gather(*running, return_exceptions=True)

    async def cancel_runs(self) -> None:
        """Cancel every run in progress (a process that is killed)."""
        running = [s.task for s in self._slots.values() if s.task is not None]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    # -- waking and waiting -----------------------------------------------------------------
    def wake(self, name: str) -> None:
        slot = self._slots.get(name)
        # already woken: the kick that woke it is pending, or its run has yet to start (and
        # will see whatever this wake-up is about); called once per job, so skip the repeat
        if slot is not None and not slot.woken:
            slot.woken = True
            self._kick()

    def _kick(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        """Until ``event`` is set or ``seconds`` pass on the clock."""
        await self.wait_until(event, self.clock.now() + timedelta(seconds=seconds))

    async def wait_until(self, event: asyncio.Event, when: datetime | None) -> None:
        if event.is_set():
            return
        waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(event.wait())}
        if when is not None:
            waiters.add(asyncio.ensure_future(self.clock.sleep_until(when)))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
