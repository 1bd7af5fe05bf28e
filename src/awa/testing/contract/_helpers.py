"""What every area of the contract shares: the fixture protocol and a few short-hands.

``StoreFixtures`` is the protocol an adapter's test class fills in (``make_store``, or the
``store`` fixture); every area mixin derives from it, so one area runs on its own. The
helpers drive a store through its public verbs only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import Job, Lease, NewJob, WaitForCallback
from awa.domain.values import CallbackToken
from awa.ports import Applied, ClaimStore, Event, Finish, Listens, Stale

__all__ = ["StoreFixtures"]


class StoreFixtures:
    """The store under test, built on the ``ManualClock`` the suite hands out."""

    def make_store(self, clock: ManualClock) -> ClaimStore:
        raise NotImplementedError("supply make_store() or override the store fixture")

    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock()

    @pytest.fixture
    def store(self, clock: ManualClock) -> ClaimStore:
        return self.make_store(clock)


def _one(store: ClaimStore, queue: str = "default", **fields: object) -> Job:
    [job] = store.insert([NewJob(kind=str(fields.pop("kind", "work")), queue=queue, **fields)])  # type: ignore[arg-type]
    return job


def _claim_one(store: ClaimStore, queue: str = "default", **kwargs: float) -> Job:
    jobs = store.claim(queue, limit=1, **kwargs)
    assert len(jobs) == 1, f"expected one claim on {queue}, got {jobs}"
    return jobs[0]


def _finish(store: ClaimStore, lease: Lease, outcome: object) -> Applied | Stale:
    return store.finish([Finish(lease, outcome)])[0]  # type: ignore[arg-type]


def _park(store: ClaimStore, job: Job, timeout_s: float = 600.0) -> str:
    registered = store.register_callback(job.lease, timeout_s=timeout_s)
    assert isinstance(registered, Applied)
    callback_id = registered.job.callback_id
    assert callback_id is not None
    token = CallbackToken(callback_id, job.lease, registered.job.callback_timeout_at or job.run_at)
    assert isinstance(_finish(store, job.lease, WaitForCallback(token)), Applied)
    return callback_id


class _Events:
    """Collects a store's hints; tests wait on a condition, never a sleep."""

    def __init__(self) -> None:
        self.seen: list[Event] = []
        self._changed = threading.Condition()

    def __call__(self, event: Event) -> None:
        with self._changed:
            self.seen.append(event)
            self._changed.notify_all()

    def wait_for(self, event: Event, timeout_s: float = 10.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: event in self.seen, timeout=timeout_s)


@contextmanager
def _heard(hints: Listens) -> Iterator[_Events]:
    """The hints ``hints`` sends while the block runs (the listener is removed after it)."""
    events = _Events()
    unsubscribe = hints.subscribe(events)
    try:
        yield events
    finally:
        unsubscribe()
