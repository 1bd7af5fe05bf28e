"""Row locks: what the PostgreSQL adapter does about a row another transaction holds.

Claimers and maintainers skip it (``SKIP LOCKED``) and return at once with the rest; a verb
that must decide about that very row waits for it, then decides on what was committed (``FOR
UPDATE``), so a decision is never written over a change it did not see. A batch of fenced
writes (heartbeats, finishes, completions) does both: it writes the rows it can lock at once,
then waits for each held row on its own, so one held row delays only its own job's write.

Nothing here is timed. A skipping verb that waited instead would run into the store's short
statement timeout and raise; a waiting verb is let go only once the server shows it waiting
for the lock (``pg_stat_activity``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, TypeVar

import attrs
import psycopg
import pytest

import awa
from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.adapters.postgres._sql import SQL
from awa.domain import (
    CallbackNotFound,
    Complete,
    Fail,
    FailCallback,
    IllegalTransition,
    JobNotFound,
    JobState,
    NewJob,
    Schedule,
    Snooze,
    Unique,
    WaitForCallback,
)
from awa.domain.values import CallbackToken
from awa.ports import Applied, Finish, Heartbeat, PartlyWritten, Stale, StaleReason
from tests.lock_waits import start_blocked

T = TypeVar("T")
STALENESS_S = 90.0


@pytest.fixture
def store(pg_clean_url: str, clock: ManualClock) -> Iterator[PostgresStore]:
    """A store whose statements give up after two seconds: one that waited for a row it
    should have skipped fails instead of hanging. A fenced write waits for its held row
    almost as long."""
    with PostgresStore(
        pg_clean_url,
        clock=clock,
        rng=random.Random(0),
        statement_timeout_s=2.0,
        held_row_wait_s=1.9,
    ) as opened:
        yield opened


@pytest.fixture
def holder(pg_clean_url: str) -> Iterator[psycopg.Connection[Any]]:
    """Another session, whose open transaction holds the rows a test locks."""
    with psycopg.connect(pg_clean_url) as conn:
        yield conn
        conn.rollback()


def _hold(holder: psycopg.Connection[Any], table: str, job_id: int) -> None:
    holder.execute(f"SELECT 1 FROM awa.{table} WHERE id = %s FOR UPDATE", [job_id])


def _after_commit(
    holder: psycopg.Connection[Any],
    change: str,
    params: Any,
    action: Callable[[], T],
    while_held: Callable[[], object] = lambda: None,
) -> T | BaseException:
    """Run ``action`` in a thread while ``holder`` changes a row it holds, let the holder
    commit once the server shows ``action`` waiting for that row (after ``while_held``, which
    looks at what is committed meanwhile), and return what ``action`` returned or raised."""
    holder.execute(change, params)
    blocked = start_blocked(holder, action)
    try:
        while_held()
    finally:
        holder.commit()
    return blocked.outcome()


def _running(store: PostgresStore, queue: str = "default", **fields: Any) -> Any:
    store.insert([NewJob(kind="k", queue=queue, **fields)])
    [job] = store.claim(queue, limit=1)
    return job


# -- the verbs that skip a held row ----------------------------------------------------------


@pytest.mark.parametrize("aging_s", [0.0, 60.0], ids=["plain", "aged"])
def test_claim_skips_a_job_another_transaction_holds(
    store: PostgresStore, holder: psycopg.Connection[Any], aging_s: float
) -> None:
    held, free = store.insert([NewJob(kind="k"), NewJob(kind="k")])
    _hold(holder, "jobs", held.id)
    claimed = store.claim("default", limit=2, priority_aging_s=aging_s)
    assert [job.id for job in claimed] == [free.id]


@pytest.mark.parametrize(
    ("limits", "aging_s"),
    [
        ({"concurrency_limit": 5}, 0.0),
        ({"concurrency_limit": 5}, 60.0),  # flow_candidates_aged.sql
        ({"key_concurrency_limit": 1}, 0.0),  # the turn window
        ({"key_rate_limit": (100.0, 10)}, 0.0),  # the keyed window
        ({"key_concurrency_limit": 1}, 60.0),  # the keyed window, aged
    ],
    ids=["queue-limit", "queue-limit-aged", "turns", "keyed", "keyed-aged"],
)
@pytest.mark.parametrize("held_key", ["a", None], ids=["keyed", "key-less"])
def test_a_limited_claim_skips_a_job_another_transaction_holds(
    store: PostgresStore,
    holder: psycopg.Connection[Any],
    limits: Any,
    aging_s: float,
    held_key: str | None,
) -> None:
    """Each window a limited claim reads locks its candidates and skips a held one, of a key
    or of the key-less jobs: not locked, the held job would be granted and its claim wait for
    the row (then time out)."""
    store.configure_queue("default", **limits)
    held, free = store.insert(
        [NewJob(kind="k", concurrency_key=held_key), NewJob(kind="k", concurrency_key="b")]
    )
    _hold(holder, "jobs", held.id)
    claimed = store.claim("default", limit=2, priority_aging_s=aging_s)
    assert [job.id for job in claimed] == [free.id]


def test_rescue_skips_an_attempt_another_transaction_holds(
    store: PostgresStore, holder: psycopg.Connection[Any], clock: ManualClock
) -> None:
    held, free = _running(store), _running(store)
    clock.advance(STALENESS_S + 1)
    _hold(holder, "jobs", held.id)
    rescued = store.rescue(staleness_s=STALENESS_S)
    assert [r.job.id for r in rescued] == [free.id]


def test_promote_skips_a_job_another_transaction_holds(
    store: PostgresStore, holder: psycopg.Connection[Any], clock: ManualClock
) -> None:
    later = clock.now() + timedelta(seconds=5)
    held, free = store.insert([NewJob(kind="k", run_at=later), NewJob(kind="k", run_at=later)])
    clock.advance(5)
    _hold(holder, "jobs", held.id)
    assert [job.id for job in store.promote()] == [free.id]


def test_retention_skips_rows_another_transaction_holds(
    store: PostgresStore, holder: psycopg.Connection[Any], clock: ManualClock
) -> None:
    store.set_dlq_enabled("dead", True)
    done = [_running(store) for _ in range(2)]
    dead = [_running(store, "dead") for _ in range(2)]
    store.finish([Finish(job.lease, Complete()) for job in done])
    store.finish([Finish(job.lease, Fail("x", terminal=True)) for job in dead])
    clock.advance(100)
    _hold(holder, "jobs", done[0].id)
    _hold(holder, "dlq", dead[0].id)
    assert store.delete_finished(older_than_s=50) == 1
    assert store.expire_dlq(older_than_s=50) == 1
    holder.rollback()
    assert store.get_job(done[0].id).state is JobState.COMPLETED
    assert store.get_dlq_entry(dead[0].id) is not None


# -- the verbs that wait for a held row, then decide on what was committed -------------------


def _finishing(state: str) -> str:
    """SQL that finishes a job the way awa's writes do: it leaves awa.jobs_hot, so the row is
    deleted and the job inserted anew (write_jobs.sql), into awa.jobs_done."""
    return (
        "WITH gone AS (DELETE FROM awa.jobs WHERE id = %s RETURNING *)"
        " INSERT INTO awa.jobs SELECT (jsonb_populate_record(NULL::awa.jobs, to_jsonb(g)"
        f" || jsonb_build_object('state', '{state}', 'finalized_at', now(),"
        " 'deadline_at', NULL, 'callback_id', NULL, 'callback_timeout_at', NULL))).*"
        " FROM gone AS g"
    )


_COMPLETE = _finishing("completed")
_CANCEL = _finishing("cancelled")


def test_cancel_decides_on_the_state_committed_while_it_waited(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    outcome = _after_commit(holder, _COMPLETE, [job.id], lambda: store.cancel(job.id))
    assert isinstance(outcome, IllegalTransition), outcome
    assert store.get_job(job.id).state is JobState.COMPLETED


def test_a_bulk_verb_decides_on_the_state_committed_while_it_waited(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    [job] = store.insert([NewJob(kind="k", queue="drained")])
    outcome = _after_commit(holder, _CANCEL, [job.id], lambda: store.drain_queue("drained"))
    assert outcome == 0  # the job it waited for was cancelled meanwhile: nothing to drain
    assert store.get_job(job.id).state is JobState.CANCELLED


def test_a_fenced_write_decides_on_the_state_committed_while_it_waited(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    outcome = _after_commit(
        holder, _CANCEL, [job.id], lambda: store.finish([Finish(job.lease, Fail("late"))])
    )
    assert outcome == [Stale(job.lease, StaleReason.CANCELLED)]
    assert store.get_job(job.id).state is JobState.CANCELLED


def test_a_heartbeat_that_waited_for_its_completion_is_stale_not_an_error(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    """The completion hot path moves the job to awa.jobs_done while the heartbeat waits for
    it: the heartbeat must then report the attempt over, as it did when the row was updated
    in place (an UPDATE moving a row across partitions would fail it instead)."""
    job = _running(store)
    complete = {"now": None, "ids": [job.id], "leases": [job.run_lease], "metadata": [None]}
    outcome = _after_commit(
        holder,
        SQL["complete_many"],
        complete,
        lambda: store.heartbeat([Heartbeat(job.lease)]),
    )
    assert outcome == [Stale(job.lease, StaleReason.STATE_CHANGED)]
    assert store.get_job(job.id).state is JobState.COMPLETED


def test_a_callback_answer_decides_on_the_state_committed_while_it_waited(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    registered = store.register_callback(job.lease)
    assert isinstance(registered, Applied)
    callback_id = registered.job.callback_id or ""
    token = CallbackToken(callback_id, job.lease, job.run_at)
    store.finish([Finish(job.lease, WaitForCallback(token))])
    outcome = _after_commit(
        holder,
        _COMPLETE,
        [job.id],
        lambda: store.resolve_callback(callback_id, FailCallback("declined")),
    )
    assert isinstance(outcome, CallbackNotFound), outcome
    assert store.get_job(job.id).state is JobState.COMPLETED


@pytest.mark.parametrize("bulk", [False, True], ids=["one", "bulk"])
def test_a_dead_letter_retry_decides_on_what_was_committed_while_it_waited(
    store: PostgresStore, holder: psycopg.Connection[Any], bulk: bool
) -> None:
    store.set_dlq_enabled("dead", True)
    job = _running(store, "dead")
    store.finish([Finish(job.lease, Fail("x", terminal=True))])

    def retry() -> object:
        if bulk:
            return store.bulk_retry_from_dlq(queue="dead")
        return store.retry_from_dlq(job.id)

    purge = "DELETE FROM awa.dlq WHERE id = %s"
    outcome = _after_commit(holder, purge, [job.id], retry)
    if bulk:
        assert outcome == []
    else:
        assert isinstance(outcome, JobNotFound), outcome
    with pytest.raises(JobNotFound):
        store.get_job(job.id)  # purged stays purged


def test_registering_keeps_a_pause_committed_while_it_waited(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    tick = Schedule(name="tick", cron="* * * * *", job=NewJob(kind="tick", args={"n": 1}))
    store.register_schedules([tick])
    changed = attrs.evolve(tick, job=NewJob(kind="tick", args={"n": 2}))
    pause = "UPDATE awa.schedules SET paused = true WHERE name = %s"
    outcome = _after_commit(holder, pause, ["tick"], lambda: store.register_schedules([changed]))
    assert isinstance(outcome, list), outcome
    [kept] = store.list_schedules()
    assert kept.schedule.job.args == {"n": 2}
    # the change is written over the pause it waited for, not over the row it first read
    assert kept.paused


def test_a_retry_decides_on_the_key_holder_committed_while_it_waited(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    once = Unique()  # failed is not among its states
    failed = _running(store, unique=once)
    store.finish([Finish(failed.lease, Fail("x", terminal=True))])
    [duplicate] = store.insert([NewJob(kind="k", unique=once)])  # the failed one gave its key up
    outcome = _after_commit(holder, _CANCEL, [duplicate.id], lambda: store.retry(failed.id))
    assert not isinstance(outcome, BaseException), outcome  # the holder let the key go
    assert store.get_job(failed.id).state is JobState.AVAILABLE


# -- a batch of fenced writes: one held row delays only its own job's write -------------------

_HOLD = "SELECT 1 FROM awa.jobs WHERE id = %s FOR UPDATE"
S = JobState


@pytest.fixture
def patient_store(pg_clean_url: str, clock: ManualClock) -> Iterator[PostgresStore]:
    """A store that waits long enough for a held row that the test can look at what was
    committed meanwhile before it lets the row go."""
    with PostgresStore(
        pg_clean_url,
        clock=clock,
        rng=random.Random(0),
        statement_timeout_s=20.0,
        call_timeout_s=30.0,
        held_row_wait_s=15.0,
    ) as opened:
        yield opened


def _states(store: PostgresStore, jobs: list[Any]) -> list[JobState]:
    return [store.get_job(job.id).state for job in jobs]


@pytest.mark.parametrize("claimed", [True, False], ids=["claimed", "whole-rows"])
def test_a_held_row_delays_only_its_own_completion(
    patient_store: PostgresStore, holder: psycopg.Connection[Any], claimed: bool
) -> None:
    """The issue's wedge: a connection abandoned mid-transaction kept one job's row locked, and
    every completion batch that included it waited out the statement timeout and failed."""
    store = patient_store
    jobs = [_running(store) for _ in range(3)]
    held = jobs[1]
    finishes = [Finish(job.lease, Complete(), claimed=job if claimed else None) for job in jobs]
    seen: list[list[JobState]] = []
    outcome = _after_commit(
        holder,
        _HOLD,
        [held.id],
        lambda: store.finish(finishes),
        while_held=lambda: seen.append(_states(store, jobs)),
    )
    # the rest of the batch was committed while the row was still held
    assert seen == [[S.COMPLETED, S.RUNNING, S.COMPLETED]]
    assert isinstance(outcome, list), outcome
    assert [type(result) for result in outcome] == [Applied] * 3  # the held one too: not stale
    assert _states(store, jobs) == [S.COMPLETED] * 3


def test_a_held_row_delays_only_its_own_heartbeat(
    patient_store: PostgresStore, holder: psycopg.Connection[Any], clock: ManualClock
) -> None:
    store = patient_store
    jobs = [_running(store) for _ in range(3)]
    claimed_at = jobs[1].heartbeat_at
    clock.advance(10)
    seen: list[list[Any]] = []
    outcome = _after_commit(
        holder,
        _HOLD,
        [jobs[1].id],
        lambda: store.heartbeat([Heartbeat(job.lease) for job in jobs]),
        while_held=lambda: seen.append([store.get_job(job.id).heartbeat_at for job in jobs]),
    )
    assert seen == [[clock.now(), claimed_at, clock.now()]]
    assert isinstance(outcome, list), outcome
    assert [r.job.heartbeat_at for r in outcome if isinstance(r, Applied)] == [clock.now()] * 3


def test_a_batch_with_a_held_row_decides_every_request_as_before(
    patient_store: PostgresStore, holder: psycopg.Connection[Any], clock: ManualClock
) -> None:
    """Only how rows are locked changes: a superseded lease is still stale, a finished one
    still refused, the held and the free ones still decided, all in request order."""
    store = patient_store
    superseded = _running(store)
    clock.advance(STALENESS_S + 1)
    store.rescue(staleness_s=STALENESS_S)
    clock.advance(3600)  # past the backoff
    [again] = store.claim("default", limit=1)
    assert again.id == superseded.id
    finished, held, free = _running(store), _running(store), _running(store)
    store.finish([Finish(finished.lease, Complete())])
    finishes = [
        Finish(superseded.lease, Snooze(60)),
        Finish(held.lease, Snooze(60)),
        Finish(finished.lease, Snooze(60)),
        Finish(free.lease, Snooze(60)),
    ]
    outcome = _after_commit(holder, _HOLD, [held.id], lambda: store.finish(finishes))
    assert isinstance(outcome, list), outcome
    assert outcome[0] == Stale(superseded.lease, StaleReason.LEASE_SUPERSEDED)
    assert isinstance(outcome[1], Applied)
    assert outcome[1].job.state is S.SCHEDULED
    assert outcome[2] == Stale(finished.lease, StaleReason.STATE_CHANGED)
    assert isinstance(outcome[3], Applied)
    assert outcome[3].job.state is S.SCHEDULED


@pytest.mark.parametrize("outcome", [Complete(), Snooze(60)], ids=["hot-path", "general-path"])
def test_a_row_held_past_the_wait_is_left_unwritten_not_stale(
    pg_clean_url: str, clock: ManualClock, holder: psycopg.Connection[Any], outcome: Any
) -> None:
    with PostgresStore(
        pg_clean_url, clock=clock, rng=random.Random(0), held_row_wait_s=0.2
    ) as store:
        jobs = [_running(store) for _ in range(3)]
        held = jobs[1]
        _hold(holder, "jobs", held.id)
        finishes = [Finish(job.lease, outcome, claimed=job) for job in jobs]
        with pytest.raises(PartlyWritten) as raised:
            store.finish(finishes)
        written = raised.value.results
        assert [type(result) for result in written] == [Applied, type(None), Applied]
        assert f"2 of 3 written; job {held.id} not written" in str(raised.value)
        assert "held_row_wait_s (0.2s)" in str(raised.value)
        assert _states(store, jobs)[1] is S.RUNNING
        holder.rollback()
        [again] = store.finish([finishes[1]])  # written again once the row is free
        assert isinstance(again, Applied), again


def test_a_worker_completes_its_other_jobs_while_one_of_their_rows_is_held(
    pg_clean_url: str, holder: psycopg.Connection[Any]
) -> None:
    """The issue's lone worker, end to end: one running job's row is held by another session
    (as by a transaction its connection abandoned) while all its handlers end together; every
    other job is completed while the row is still held, and the held one once it is let go."""
    count = 20

    async def story() -> None:
        with PostgresStore(pg_clean_url, held_row_wait_s=0.2) as store:
            client = awa.AsyncClient(store=store)
            started: list[int] = []
            all_started, ended = asyncio.Event(), asyncio.Event()

            @client.task(dict, kind="k")
            async def handle(job: awa.Job[dict[str, Any]]) -> None:
                started.append(job.id)
                if len(started) == count:
                    all_started.set()
                await ended.wait()

            jobs = await client.insert_many([awa.InsertSpec(args={}, kind="k")] * count)
            await client.start([("default", count)])
            await asyncio.wait_for(all_started.wait(), 10)
            held = jobs[count // 2]
            _hold(holder, "jobs", held.id)
            ended.set()
            others = [job.id for job in jobs if job.id != held.id]
            await _until_async(lambda: _all_completed(store, others), 10)
            assert store.get_job(held.id).state is JobState.RUNNING  # still held
            holder.rollback()
            await _until_async(lambda: _all_completed(store, [held.id]), 10)
            await client.shutdown()

    asyncio.run(story())


def _all_completed(store: PostgresStore, ids: list[int]) -> bool:
    return all(store.get_job(job_id).state is JobState.COMPLETED for job_id in ids)


async def _until_async(condition: Callable[[], bool], timeout_s: float) -> None:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + timeout_s
    while not condition():
        assert loop.time() < give_up, f"not within {timeout_s}s"
        await asyncio.sleep(0.02)  # the poll period, not a synchronisation
