"""The memory store's fault hooks strike where they say, and only there."""

import random
import threading
import uuid

import pytest

from awa.adapters.memory import ManualClock, MemoryStore, SimulatedCrash
from awa.domain import Complete, Fail, JobState, Lease, NewJob
from awa.ports import Applied, Finish, Heartbeat, Stale, StaleReason


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore(ManualClock(), rng=random.Random(0))


def test_a_staged_crash_waits_for_a_claim_that_takes_something(store: MemoryStore) -> None:
    store.faults.crash_after_claim()
    assert store.claim("default", limit=1) == []  # nothing to hold: nothing to crash with
    [job] = store.insert([NewJob(kind="k")])
    with pytest.raises(SimulatedCrash) as crash:
        store.claim("default", limit=1)
    assert crash.value.leases == [store.get_job(job.id).lease]


def test_a_batch_with_one_delayed_job_is_held_whole(store: MemoryStore) -> None:
    store.insert([NewJob(kind="k"), NewJob(kind="k")])
    late, prompt = store.claim("default", limit=2)
    store.faults.delay_finishes([late.id])
    results: list[object] = []
    finisher = threading.Thread(
        target=lambda: results.extend(
            store.finish([Finish(prompt.lease, Complete()), Finish(late.lease, Complete())])
        )
    )
    finisher.start()
    assert store.faults.wait_for_held(1)
    assert store.get_job(prompt.id).state is JobState.RUNNING, "held whole, not in part"
    assert store.faults.deliver_finishes()
    finisher.join()
    assert all(isinstance(result, Applied) for result in results)


def test_a_lost_heartbeat_reports_what_the_worker_would_have_seen(store: MemoryStore) -> None:
    [job] = store.insert([NewJob(kind="k")])
    [running] = store.claim("default", limit=1)
    store.faults.stall_heartbeats()
    gone = Lease(999, 1)
    kept, missing = store.heartbeat([Heartbeat(running.lease), Heartbeat(gone)])
    assert kept == Applied(store.get_job(job.id))
    assert missing == Stale(gone, StaleReason.NOT_FOUND)
    assert store.get_job(job.id).heartbeat_at == running.heartbeat_at  # never arrived


def test_a_seeded_store_repeats_its_callback_ids_and_jitter() -> None:
    def run(seed: int) -> tuple[object, ...]:
        store = MemoryStore(ManualClock(), rng=random.Random(seed))
        store.insert([NewJob(kind="k"), NewJob(kind="k")])
        first, second = store.claim("default", limit=2)
        registered = store.register_callback(first.lease)
        assert isinstance(registered, Applied)
        [retried] = store.finish([Finish(second.lease, Fail("again"))])
        assert isinstance(retried, Applied)
        return registered.job.callback_id, retried.job.run_at

    assert run(5) == run(5)
    assert run(5) != run(6)
    callback_id = run(5)[0]
    assert isinstance(callback_id, str)
    assert uuid.UUID(callback_id).version == 4
