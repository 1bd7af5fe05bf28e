"""The law of hostile input: refused with nothing written, or stored and read back whole.

Hypothesis draws hostile values for every input a caller gives a store (each field of a job,
a snooze or retry delay, a callback timeout, retention settings; ``awa.testing.
strategies_hostile``) and sends them down every insert path the store has (one job, a batch,
a unique job, a streamed batch). Each value is either refused with one ``ValidationError``
and nothing written, or stored and then read back equal, type by type, by ``get_job``,
``list_jobs`` and ``claim``, and cancelled without error. Nothing in between: no value may be
stored that a reader cannot read back (the ``Unreadable`` path is for rows awa did not write).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta, timezone
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awa.adapters.memory import ManualClock
from awa.domain import (
    Job,
    JobState,
    NewJob,
    RetryAfter,
    Snooze,
    Unique,
    ValidationError,
)
from awa.ports import BATCH_SIZE_MAX, Applied, ClaimStore, Finish, StreamsInserts
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _one
from awa.testing.strategies_hostile import (
    JOB_FIELDS,
    hostile_job_fields,
    hostile_seconds,
    json_equal,
)

__all__ = ["HostileInputContract", "assert_read_back_whole"]

#: examples per law and path: enough to meet every kind of hostile value many times, few
#: enough that a store on a real database runs them in seconds
EXAMPLES = 200

# each store's test class calls the same law (differing executors), on a store kept from
# example to example (a function-scoped fixture): examples never rely on what came before
_LAW = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.differing_executors,
    ],
)
_numbering = itertools.count()


def _single(store: ClaimStore, job: NewJob) -> list[Job]:
    return store.insert([job])


def _batch(store: ClaimStore, job: NewJob) -> list[Job]:
    """With a plain neighbour: on PostgreSQL, a batch of plain jobs is copied (COPY)."""
    return store.insert([job, NewJob(kind="neighbour", queue=job.queue)])


def _unique(store: ClaimStore, job: NewJob) -> list[Job]:
    return store.insert([attrs.evolve(job, unique=Unique(by_args=True))], on_conflict="skip")


def _streamed(store: ClaimStore, job: NewJob) -> list[Job]:
    assert isinstance(store, StreamsInserts)
    return store.insert_streamed(2, iter([[job], [NewJob(kind="neighbour", queue=job.queue)]]))


_PATHS: dict[str, Callable[[ClaimStore, NewJob], list[Job]]] = {
    "single": _single,
    "batch": _batch,
    "unique": _unique,
    "streamed": _streamed,
}


def _one_line_refusal(make: Callable[[], Any]) -> tuple[Any, bool]:
    """``make()``, or ``None`` and ``True`` when it is refused; a refusal is one line."""
    try:
        return make(), False
    except ValidationError as refused:
        message = str(refused)
    assert message, "a refusal says why"
    assert "\n" not in message, message
    return None, True


def assert_read_back_whole(got: Job, given: dict[str, Any], job: NewJob) -> None:
    """``got`` holds what the caller gave, type by type."""
    assert not got.unreadable, got.unreadable
    assert (got.kind, got.queue) == (job.kind, job.queue)
    assert (got.priority, got.max_attempts) == (job.priority, job.max_attempts)
    assert json_equal(got.args, given.get("args", {})), (got.args, given.get("args"))
    assert json_equal(got.metadata, given.get("metadata", {}))
    assert got.tags == tuple(given.get("tags", ()))
    run_at = given.get("run_at")
    if run_at is not None:  # the same instant, whatever zone it was given in
        assert got.run_at == run_at.astimezone(timezone.utc)
        assert got.run_at.tzinfo is not None


class HostileInputContract(StoreFixtures):
    """Every hostile value is refused with nothing written, or read back whole."""

    @pytest.mark.parametrize("hostile", list(JOB_FIELDS))
    @_LAW
    @given(data=st.data())
    def test_a_hostile_job_is_refused_orassert_read_back_whole(
        self, store: ClaimStore, hostile: str, data: st.DataObject
    ) -> None:
        fields = dict(data.draw(hostile_job_fields(hostile), label="fields"))
        paths = [p for p in _PATHS if p != "streamed" or isinstance(store, StreamsInserts)]
        path = data.draw(st.sampled_from(paths), label="path")
        if isinstance(fields.get("args"), dict):  # no unique key taken by an earlier example
            fields["args"] = {**fields["args"], "example": next(_numbering)}
        job, refused = _one_line_refusal(lambda: NewJob(**fields))
        if refused:
            return
        before = store.count_jobs()
        inserted, refused = _one_line_refusal(lambda: _PATHS[path](store, job))
        if refused:
            assert store.count_jobs() == before, "a refused insert wrote a job"
            return
        mine = inserted[0]
        assert_read_back_whole(mine, fields, job)
        assert_read_back_whole(store.get_job(mine.id), fields, job)
        listed = [j for j in store.list_jobs(queue=job.queue, limit=BATCH_SIZE_MAX)]
        [found] = [j for j in listed if j.id == mine.id]
        assert_read_back_whole(found, fields, job)
        if mine.state is JobState.AVAILABLE:
            claimed = {j.id: j for j in store.claim(job.queue, limit=BATCH_SIZE_MAX)}
            assert_read_back_whole(claimed[mine.id], fields, job)
        for other in inserted:
            assert store.cancel(other.id).state is JobState.CANCELLED
        assert_read_back_whole(store.get_job(mine.id), fields, job)

    @pytest.mark.parametrize("outcome", [Snooze, RetryAfter])
    @_LAW
    @given(seconds=hostile_seconds)
    def test_a_hostile_delay_is_refused_or_applied_exactly(
        self, store: ClaimStore, clock: ManualClock, outcome: type, seconds: Any
    ) -> None:
        decided, refused = _one_line_refusal(lambda: outcome(seconds))
        if refused:
            return
        job = _one(store, queue="delays")
        claimed = _claim_one(store, "delays")
        [result] = store.finish([Finish(claimed.lease, decided)])
        assert isinstance(result, Applied), result
        later = store.get_job(job.id)
        assert later.run_at == clock.now() + timedelta(seconds=float(seconds))
        assert store.cancel(job.id).state is JobState.CANCELLED

    @_LAW
    @given(timeout=hostile_seconds)
    def test_a_hostile_callback_timeout_is_refused_or_kept_exactly(
        self, store: ClaimStore, clock: ManualClock, timeout: Any
    ) -> None:
        job = _one(store, queue="callbacks")
        claimed = _claim_one(store, "callbacks")
        result, refused = _one_line_refusal(
            lambda: store.register_callback(claimed.lease, timeout_s=timeout)
        )
        if refused:
            assert store.get_job(job.id).callback_id is None
        else:
            assert isinstance(result, Applied), result
            expected = clock.now() + timedelta(seconds=float(timeout))
            assert store.get_job(job.id).callback_timeout_at == expected
        assert store.cancel(job.id).state is JobState.CANCELLED

    @_LAW
    @given(finished=hostile_seconds, failed=hostile_seconds, dead=hostile_seconds)
    def test_hostile_retention_settings_are_refused_or_kept_exactly(
        self, store: ClaimStore, finished: Any, failed: Any, dead: Any
    ) -> None:
        before = {s.queue: s for s in store.queue_stats()}.get("kept")
        settings, refused = _one_line_refusal(
            lambda: store.configure_queue(
                "kept",
                finished_retention_s=finished,
                failed_retention_s=failed,
                dlq_retention_s=dead,
            )
        )
        if refused:
            after = {s.queue: s for s in store.queue_stats()}.get("kept")
            assert after == before, "a refused setting changed the queue"
            return
        stats = {s.queue: s for s in store.queue_stats()}["kept"]
        for asked, kept, shown in (
            (finished, settings.finished_retention_s, stats.finished_retention_s),
            (failed, settings.failed_retention_s, stats.failed_retention_s),
            (dead, settings.dlq_retention_s, stats.dlq_retention_s),
        ):
            if asked is not None:  # to the microsecond, the finest time a store keeps
                assert kept == timedelta(seconds=asked).total_seconds()
            assert shown == kept
