"""The contract of unique jobs: a key is held while its job is in its unique states.

Inserts that meet a holder raise ``UniqueConflict`` (nothing inserted) or are answered with the
holder; what makes a duplicate (args, chosen fields, queue, period); the key released and taken
back as the job moves through every transition of the table (generated from it); operator
retries and redrives that would take a held key back; ``cancel_by_unique_key``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import (
    DEFAULT_UNIQUE_STATES,
    TRANSITIONS,
    Complete,
    Fail,
    IllegalTransition,
    JobState,
    NewJob,
    Trigger,
    Unique,
    UniqueConflict,
    ValidationError,
    holds_unique_key,
)
from awa.domain.states import TERMINAL_STATES
from awa.ports import ClaimStore
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish
from awa.testing.scenarios import drive_to, fire

__all__ = ["UniqueContract"]

NOT_TERMINAL = frozenset(JobState) - TERMINAL_STATES
#: the state sets the table is walked with: the default, "while not finished", every state
MASKS = {
    "default": DEFAULT_UNIQUE_STATES,
    "unfinished": NOT_TERMINAL,
    "always": frozenset(JobState),
}
_PAIRS = [(mask, s, t) for mask in MASKS for (s, t) in TRANSITIONS]


def _report(n: int = 7, **fields: object) -> NewJob:
    unique = fields.pop("unique", Unique())
    return NewJob(kind="report", args={"n": n}, unique=unique, **fields)  # type: ignore[arg-type]


def _fail(store: ClaimStore, queue: str = "default") -> int:
    job = _claim_one(store, queue)
    _finish(store, job.lease, Fail("x", terminal=True))
    return job.id


class UniqueContract(StoreFixtures):
    """Never two jobs holding one key, whatever moves them."""

    def test_a_duplicate_insert_raises_with_the_holder_and_inserts_nothing(
        self, store: ClaimStore
    ) -> None:
        [holder] = store.insert([_report()])
        assert holder.unique_key is not None
        assert holds_unique_key(holder)
        with pytest.raises(UniqueConflict, match=f"job {holder.id} ") as raised:
            store.insert([NewJob(kind="other"), _report()])
        assert raised.value.job_id == holder.id
        assert [j.id for j in store.list_jobs()] == [holder.id], "the batch is all or nothing"

    def test_skip_answers_a_duplicate_with_the_holder_and_inserts_the_rest(
        self, store: ClaimStore
    ) -> None:
        [holder] = store.insert([_report()])
        other, again = store.insert([NewJob(kind="other"), _report()], on_conflict="skip")
        assert again == holder
        assert other.kind == "other"
        assert len(store.list_jobs()) == 2

    def test_a_key_repeated_within_one_insert(self, store: ClaimStore) -> None:
        with pytest.raises(ValidationError, match="jobs 0 and 2 of this insert"):
            store.insert([_report(), NewJob(kind="x"), _report()])
        assert store.list_jobs() == []
        first, _other, second = store.insert(
            [_report(), NewJob(kind="x"), _report()], on_conflict="skip"
        )
        assert second == first
        assert len(store.list_jobs()) == 2

    def test_a_repeat_within_one_insert_beside_plain_jobs_and_stored_ones(
        self, store: ClaimStore
    ) -> None:
        store.insert([NewJob(kind="stored"), NewJob(kind="stored")])
        first, plain, other, again = store.insert(
            [_report(), NewJob(kind="x"), NewJob(kind="x"), _report()], on_conflict="skip"
        )
        assert again == first
        assert len({first.id, plain.id, other.id}) == 3  # jobs without a key never repeat
        assert len(store.list_jobs()) == 5

    def test_what_makes_a_duplicate(self, store: ClaimStore) -> None:
        by_to = Unique(by_args=["to"])
        per_queue = Unique(by_args=False, by_queue=True)
        store.insert(
            [
                _report(1),
                _report(2),  # other args
                NewJob(kind="mail", args={"to": "a", "n": 1}, unique=by_to),
                NewJob(kind="mail", args={"to": "b", "n": 1}, unique=by_to),
                NewJob(kind="ping", queue="q1", unique=per_queue),
                NewJob(kind="ping", queue="q2", unique=per_queue),
            ]
        )
        duplicates = [
            _report(1, queue="elsewhere"),  # the queue is not part of the key by default
            NewJob(kind="mail", args={"to": "a", "n": 2}, unique=by_to),  # only "to" counts
            NewJob(kind="ping", queue="q1", args={"x": 1}, unique=per_queue),  # args ignored
        ]
        for duplicate in duplicates:
            with pytest.raises(UniqueConflict):
                store.insert([duplicate])
        store.insert([NewJob(kind="ping", queue="q3", unique=Unique(by_args=False))])
        with pytest.raises(UniqueConflict):
            store.insert([NewJob(kind="ping", queue="q4", args={"y": 1}, unique=Unique(False))])
        assert len(store.list_jobs()) == 7

    def test_a_period_allows_one_job_per_period_of_run_at(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        hourly = Unique(period=3600)
        top = clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        clock.set(top + timedelta(minutes=10))
        [first] = store.insert([_report(unique=hourly)])
        with pytest.raises(UniqueConflict):
            store.insert([_report(unique=hourly, run_at=top + timedelta(minutes=59))])
        later = store.insert([_report(unique=hourly, run_at=top + timedelta(hours=1))])
        assert later[0].state is JobState.SCHEDULED
        clock.advance(3600)  # the next period: the first job no longer blocks
        assert store.insert([_report(unique=hourly)], on_conflict="skip") == later
        assert first.unique_key != later[0].unique_key

    def test_unsafe_state_sets_are_refused_before_any_store_is_touched(self) -> None:
        with pytest.raises(ValidationError, match="not safe: promote"):
            Unique(states={JobState.AVAILABLE})
        with pytest.raises(ValidationError, match="at least one"):
            Unique(states=set())

    @pytest.mark.parametrize(
        ("mask", "state", "trigger"),
        _PAIRS,
        ids=[f"{m}-{s.value}-{t.value}" for m, s, t in _PAIRS],
    )
    def test_every_transition_holds_the_key_exactly_in_its_states(
        self,
        store: ClaimStore,
        clock: ManualClock,
        mask: str,
        state: JobState,
        trigger: Trigger,
    ) -> None:
        states = MASKS[mask]
        last = trigger in (Trigger.RESCUE_FAIL, Trigger.RELEASE_FAIL)
        unique = Unique(by_args=False, states=states)
        driven = drive_to(store, clock, state, max_attempts=1 if last else 5, unique=unique)
        fired = fire(store, clock, trigger, driven)
        assert fired.accepted, f"{trigger} from {state}: {fired.detail}"
        after = store.get_job(driven.job.id)
        in_dlq = store.get_dlq_entry(after.id) is not None
        holds = after.state in states and not in_dlq  # a dead letter holds no key
        assert (holds_unique_key(after) and not in_dlq) is holds
        duplicate = NewJob(kind="scenario", queue="elsewhere", unique=unique)
        if holds:
            with pytest.raises(UniqueConflict) as raised:
                store.insert([duplicate])
            assert raised.value.job_id == after.id
        else:
            [taken] = store.insert([duplicate])
            assert holds_unique_key(taken)

    def test_operator_retry_that_would_take_a_held_key_back_is_refused(
        self, store: ClaimStore
    ) -> None:
        store.insert([_report()])
        failed_id = _fail(store)  # failed is outside the default states: the key is free
        [successor] = store.insert([_report()])
        before = store.get_job(failed_id)
        with pytest.raises(UniqueConflict) as raised:
            store.retry(failed_id)
        assert raised.value.job_id == successor.id
        assert store.get_job(failed_id) == before
        store.cancel(successor.id)  # the key is free again: the retry takes it back
        retried = store.retry(failed_id)
        assert retried.state is JobState.AVAILABLE
        assert holds_unique_key(retried)

    def test_a_dead_letter_holds_no_key_and_its_redrive_takes_it_back(
        self, store: ClaimStore
    ) -> None:
        store.set_dlq_enabled("d", True)
        always = Unique(states=frozenset(JobState))
        store.insert([_report(queue="d", unique=always), _report(8, queue="d", unique=always)])
        dead = [_fail(store, "d"), _fail(store, "d")]
        [successor] = store.insert([_report(queue="d", unique=always)])
        with pytest.raises(UniqueConflict):
            store.retry_from_dlq(dead[0])
        retried = store.bulk_retry_from_dlq(queue="d")
        assert [j.id for j in retried] == [dead[1]], "the held one stays in the DLQ"
        assert [e.job.id for e in store.list_dlq(queue="d")] == [dead[0]]
        store.cancel(successor.id)
        with pytest.raises(UniqueConflict):  # cancelled is in "always": it still holds
            store.retry_from_dlq(dead[0])

    def test_one_bulk_retry_gives_a_key_back_to_one_dead_letter_only(
        self, store: ClaimStore
    ) -> None:
        store.set_dlq_enabled("d", True)
        store.insert([_report(queue="d")])
        first = _fail(store, "d")
        store.insert([_report(queue="d")])  # the key is free: its holder was dead-lettered
        second = _fail(store, "d")
        retried = store.bulk_retry_from_dlq(queue="d")
        assert [j.id for j in retried] == [first], "the second would hold the first's key"
        assert [e.job.id for e in store.list_dlq(queue="d")] == [second]

    def test_retry_failed_skips_a_job_whose_key_is_held(self, store: ClaimStore) -> None:
        store.insert([_report(1), _report(2), _report(1, queue="other")], on_conflict="skip")
        first, second = _fail(store), _fail(store)
        store.insert([_report(1)])
        retried = store.retry_failed(queue="default")
        assert [j.id for j in retried] == [second]
        assert store.get_job(first).state is JobState.FAILED

    def test_cancel_by_a_period_key_finds_the_holder_of_the_current_period(
        self, store: ClaimStore
    ) -> None:
        hourly = Unique(period=3600)
        [holder] = store.insert([_report(unique=hourly)])
        cancelled = store.cancel_by_unique_key(_report(unique=hourly))  # no run_at: now
        assert cancelled is not None
        assert (cancelled.id, cancelled.state) == (holder.id, JobState.CANCELLED)

    def test_cancel_by_unique_key_cancels_the_holder(self, store: ClaimStore) -> None:
        assert store.cancel_by_unique_key(_report()) is None
        holder, _ = store.insert([_report(), _report(8)])
        assert _claim_one(store).id == holder.id
        cancelled = store.cancel_by_unique_key(_report())
        assert cancelled is not None
        assert cancelled.id == holder.id
        assert cancelled.state is JobState.CANCELLED
        assert store.cancel_by_unique_key(_report()) is None  # released: nothing holds it
        done = _claim_one(store)
        _finish(store, done.lease, Complete())  # completed still holds by default
        with pytest.raises(IllegalTransition, match="is completed"):
            store.cancel_by_unique_key(_report(8))
        assert store.get_job(done.id).state is JobState.COMPLETED
