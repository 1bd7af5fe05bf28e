"""The memory store's fault hooks strike where they say, and only there."""

import random
import threading

import pytest

from awa.adapters.memory import ManualClock, MemoryStore, SimulatedCrash
from awa.domain import Complete, JobState, NewJob
from awa.ports import Applied, Finish


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
