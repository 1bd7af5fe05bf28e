"""Every path of the seed's "Common paths" and its crash stories, as short stories on the
in-memory store under the manual clock, using the fault hooks a test author would use."""

import random
import threading
from datetime import timedelta
from typing import Any

import pytest

from awa.adapters.memory import ManualClock, MemoryStore, SimulatedCrash
from awa.domain import (
    CallbackToken,
    Cancel,
    Complete,
    CompleteCallback,
    Fail,
    FailCallback,
    Job,
    JobState,
    NewJob,
    Outcome,
    Resolution,
    ResumeCallback,
    RetryAfter,
    RetryCallback,
    Snooze,
    WaitForCallback,
)
from awa.ports import Applied, Finish, Heartbeat, Stale, StaleReason, WriteResult

STALENESS_S = 90


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(clock: ManualClock) -> MemoryStore:
    return MemoryStore(clock, rng=random.Random(11))


def _run(store: MemoryStore, **fields: Any) -> tuple[int, Job]:
    [job] = store.insert([NewJob(kind="story", **fields)])
    [running] = store.claim(job.queue, limit=1)
    return job.id, running


def _park(store: MemoryStore, running: Job) -> str:
    lease = running.lease
    registered = store.register_callback(lease, timeout_s=600)
    assert isinstance(registered, Applied)
    cid = registered.job.callback_id
    assert cid is not None
    parked = store.finish(
        [Finish(lease, WaitForCallback(CallbackToken(cid, lease, store.clock.now())))]
    )
    assert isinstance(parked[0], Applied)
    return cid


def test_available_running_completed(store: MemoryStore) -> None:
    job_id, running = _run(store)
    assert running.attempt == 1  # claiming increments first
    store.finish([Finish(running.lease, Complete())])
    assert store.get_job(job_id).state is JobState.COMPLETED


def test_running_retryable_available_when_due(store: MemoryStore, clock: ManualClock) -> None:
    job_id, running = _run(store)
    store.finish([Finish(running.lease, RetryAfter(30))])
    assert store.get_job(job_id).state is JobState.RETRYABLE
    clock.advance(30)
    [promoted] = store.promote()
    assert promoted.state is JobState.AVAILABLE
    [again] = store.claim("default", limit=1)
    assert again.attempt == 2


def test_running_scheduled_available_by_snooze_keeps_the_budget(
    store: MemoryStore, clock: ManualClock
) -> None:
    job_id, running = _run(store, max_attempts=1)
    store.finish([Finish(running.lease, Snooze(10))])
    assert store.get_job(job_id).state is JobState.SCHEDULED
    clock.advance(10)
    store.promote()
    assert store.get_job(job_id).state is JobState.AVAILABLE
    [again] = store.claim("default", limit=1)
    assert again.attempt == 1  # polling never spent the only attempt


def test_running_waiting_external_running(store: MemoryStore) -> None:
    job_id, running = _run(store)
    cid = _park(store, running)
    resumed = store.resolve_callback(cid, ResumeCallback({"status": "paid"}))
    assert (resumed.state, resumed.callback_result) == (JobState.RUNNING, {"status": "paid"})
    # the still-live handler finishes with its original lease
    assert isinstance(store.finish([Finish(running.lease, Complete())])[0], Applied)
    assert store.get_job(job_id).state is JobState.COMPLETED


@pytest.mark.parametrize(
    ("resolution", "state"),
    [
        (CompleteCallback({"ok": True}), JobState.COMPLETED),
        (FailCallback("declined"), JobState.FAILED),
    ],
)
def test_waiting_external_completed_or_failed(
    store: MemoryStore, resolution: Resolution, state: JobState
) -> None:
    _job_id, running = _run(store)
    cid = _park(store, running)
    assert store.resolve_callback(cid, resolution).state is state


def test_waiting_external_available_by_callback_retry_resets_attempts(store: MemoryStore) -> None:
    _job_id, running = _run(store)
    cid = _park(store, running)
    restarted = store.resolve_callback(cid, RetryCallback())
    assert (restarted.state, restarted.attempt) == (JobState.AVAILABLE, 0)


@pytest.mark.parametrize(("max_attempts", "state"), [(2, JobState.RETRYABLE), (1, JobState.FAILED)])
def test_waiting_external_retryable_or_failed_when_the_callback_times_out(
    store: MemoryStore, clock: ManualClock, max_attempts: int, state: JobState
) -> None:
    _job_id, running = _run(store, max_attempts=max_attempts)
    _park(store, running)
    clock.advance(601)
    [rescued] = store.rescue(staleness_s=STALENESS_S)
    assert rescued.job.state is state
    assert rescued.job.errors[-1].error == "callback timed out"


@pytest.mark.parametrize(
    ("outcome", "state"),
    [
        (Fail("TerminalError: bad", terminal=True), JobState.FAILED),
        (Cancel("no longer needed"), JobState.CANCELLED),
    ],
)
def test_running_failed_or_cancelled(store: MemoryStore, outcome: Outcome, state: JobState) -> None:
    job_id, running = _run(store)
    store.finish([Finish(running.lease, outcome)])
    assert store.get_job(job_id).state is state


# -- crash recovery with the fault hooks ----------------------------------------------------


def test_worker_crash_after_claim_is_rescued_and_reclaimed_with_the_next_lease(
    store: MemoryStore, clock: ManualClock
) -> None:
    store.insert([NewJob(kind="story")])
    store.faults.crash_after_claim()
    with pytest.raises(SimulatedCrash) as crash:
        store.claim("default", limit=1)
    [dead_lease] = crash.value.leases
    assert store.get_job(dead_lease.job_id).state is JobState.RUNNING  # nobody owns it now
    clock.advance(STALENESS_S + 1)
    [rescued] = store.rescue(staleness_s=STALENESS_S)
    assert rescued.job.errors[-1].error == "heartbeat stale: worker presumed dead"
    clock.set(rescued.job.run_at)
    [second] = store.claim("default", limit=1)
    assert (second.id, second.run_lease, second.attempt) == (dead_lease.job_id, 2, 2)


def test_a_crash_spends_an_attempt_of_every_job_the_worker_held(
    store: MemoryStore, clock: ManualClock
) -> None:
    store.insert([NewJob(kind="poison"), NewJob(kind="bystander")])
    store.faults.crash_after_claim()
    with pytest.raises(SimulatedCrash):
        store.claim("default", limit=2)
    clock.advance(STALENESS_S + 1)
    rescued = store.rescue(staleness_s=STALENESS_S)
    assert sorted(r.job.kind for r in rescued) == ["bystander", "poison"]
    assert all(r.job.attempt == 1 and r.job.state is JobState.RETRYABLE for r in rescued)


def test_stalled_heartbeats_get_a_live_worker_presumed_dead(
    store: MemoryStore, clock: ManualClock
) -> None:
    job_id, running = _run(store)
    store.faults.stall_heartbeats([job_id])
    for _ in range(2):
        clock.advance(60)
        [result] = store.heartbeat([Heartbeat(running.lease)])
        assert isinstance(result, Applied)  # the worker hears nothing wrong
    [rescued] = store.rescue(staleness_s=STALENESS_S)
    assert rescued.job.id == job_id
    store.faults.resume_heartbeats()
    [late] = store.heartbeat([Heartbeat(running.lease)])
    assert late == Stale(running.lease, StaleReason.STATE_CHANGED)


def test_late_finish_after_rescue_is_ignored_and_the_second_worker_stands(
    store: MemoryStore, clock: ManualClock
) -> None:
    job_id, first = _run(store)
    store.faults.delay_finishes([job_id])
    results: list[WriteResult] = []
    frozen = threading.Thread(
        target=lambda: results.extend(store.finish([Finish(first.lease, Fail("late"))]))
    )
    frozen.start()
    assert store.faults.wait_for_held(1)  # the first worker is frozen mid-finish
    clock.advance(STALENESS_S + 1)
    store.rescue(staleness_s=STALENESS_S)
    clock.advance(3600)
    [second] = store.claim("default", limit=1)
    # the delay applies to the job, so deliver the frozen finish only after the new one
    store.faults.delay_finishes([])
    assert isinstance(store.finish([Finish(second.lease, Complete())])[0], Applied)
    assert store.faults.deliver_finishes()
    frozen.join(timeout=10)
    assert results == [Stale(first.lease, StaleReason.LEASE_SUPERSEDED)]
    done = store.get_job(job_id)
    assert (done.state, done.run_lease) == (JobState.COMPLETED, 2)
    assert [e.error for e in done.errors] == ["heartbeat stale: worker presumed dead"]


def test_operator_cancel_then_late_finish_keeps_the_job_cancelled(store: MemoryStore) -> None:
    job_id, running = _run(store)
    store.cancel(job_id)
    [late] = store.finish([Finish(running.lease, Complete())])
    assert late == Stale(running.lease, StaleReason.CANCELLED)
    assert store.get_job(job_id).state is JobState.CANCELLED


def test_manual_clock_wakes_sleepers_when_time_passes_them(clock: ManualClock) -> None:
    import asyncio

    async def story() -> list[str]:
        woke: list[str] = []

        async def sleeper(name: str, after_s: int) -> None:
            await clock.sleep_until(clock.now() + timedelta(seconds=after_s))
            woke.append(name)

        tasks = [asyncio.create_task(sleeper("a", 10)), asyncio.create_task(sleeper("b", 20))]
        await asyncio.sleep(0)
        assert clock.next_wakeup() == clock.now() + timedelta(seconds=10)
        clock.advance(15)
        await asyncio.wait_for(tasks[0], timeout=5)
        assert woke == ["a"]
        clock.advance(5)
        await asyncio.wait_for(tasks[1], timeout=5)
        return woke

    assert asyncio.run(story()) == ["a", "b"]
