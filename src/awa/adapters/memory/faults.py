"""Fault hooks: make a worker crash after its claim, go silent, or finish late."""

from __future__ import annotations

import threading
from collections.abc import Collection

from awa.domain import Lease

__all__ = ["FaultHooks", "SimulatedCrash"]


class SimulatedCrash(BaseException):
    """The worker died right after the store committed its claim.

    A ``BaseException`` so handler-level ``except Exception`` blocks do not swallow it. The
    claimed attempts stay ``running`` with nobody heartbeating them, exactly as after a
    SIGKILL, and ``leases`` names them.
    """

    def __init__(self, leases: list[Lease]) -> None:
        super().__init__(f"simulated crash after claiming {', '.join(map(str, leases))}")
        self.leases = leases


class FaultHooks:
    """Switches a test flips on a ``MemoryStore``. All are off by default.

    * ``crash_after_claim(n)``: the next ``n`` non-empty claims commit, then raise
      ``SimulatedCrash`` instead of returning.
    * ``stall_heartbeats(job_ids)``: heartbeats for these jobs (all when ``None``) are lost on
      the way: the caller hears they were fine, the store never sees them.
    * ``delay_finishes(job_ids)``: finishes for these jobs (all when ``None``) block the calling
      thread until ``deliver_finishes()``; they are then applied, in arrival order, at the
      time of delivery. This is a worker frozen in a pause that resumes after a rescue.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._crashes_left = 0
        self._stalled: frozenset[int] | None = frozenset()
        self._delayed: frozenset[int] | None = frozenset()
        self._gate = threading.Condition(self._lock)
        self._held = 0
        self._released_generation = 0

    # -- crash ---------------------------------------------------------------------------------
    def crash_after_claim(self, times: int = 1) -> None:
        with self._lock:
            self._crashes_left = times

    def take_crash(self) -> bool:
        with self._lock:
            if self._crashes_left <= 0:
                return False
            self._crashes_left -= 1
            return True

    # -- heartbeats ----------------------------------------------------------------------------
    def stall_heartbeats(self, job_ids: Collection[int] | None = None) -> None:
        with self._lock:
            self._stalled = None if job_ids is None else frozenset(job_ids)

    def resume_heartbeats(self) -> None:
        with self._lock:
            self._stalled = frozenset()

    def heartbeat_is_lost(self, job_id: int) -> bool:
        with self._lock:
            return self._stalled is None or job_id in self._stalled

    # -- late finishes -------------------------------------------------------------------------
    def delay_finishes(self, job_ids: Collection[int] | None = None) -> None:
        with self._lock:
            self._delayed = None if job_ids is None else frozenset(job_ids)

    def finish_is_delayed(self, job_id: int) -> bool:
        with self._lock:
            return self._delayed is None or job_id in self._delayed

    def hold_finish(self) -> None:
        """Called by the store on the finishing thread: wait for the next delivery. The store
        calls ``finish_applied`` once the held finish is written."""
        with self._gate:
            generation = self._released_generation
            self._held += 1
            self._gate.notify_all()
            self._gate.wait_for(lambda: self._released_generation != generation)

    def finish_applied(self) -> None:
        with self._gate:
            self._held -= 1
            self._gate.notify_all()

    def wait_for_held(self, count: int = 1, timeout_s: float = 10.0) -> bool:
        """Block until ``count`` finishes are held (a signal, not a sleep)."""
        with self._gate:
            return self._gate.wait_for(lambda: self._held >= count, timeout=timeout_s)

    def deliver_finishes(self, timeout_s: float = 10.0) -> bool:
        """Release every held finish, stop delaying new ones, and wait until all are applied.
        Returns False if they were not all applied within ``timeout_s``."""
        with self._gate:
            self._delayed = frozenset()
            self._released_generation += 1
            self._gate.notify_all()
            return self._gate.wait_for(lambda: self._held == 0, timeout=timeout_s)
