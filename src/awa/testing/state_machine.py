"""A Hypothesis state machine that drives any ``ClaimStore`` and checks the lifecycle's laws.

Build a test class for your adapter with::

    TestMyStoreMachine = make_state_machine(lambda clock: MyStore(clock=clock)).TestCase

Each rule predicts the store's answer from the pure domain (the reference) before calling the
store, so a store that applies a write the lease should have fenced off, claims the wrong job,
or loses a job fails here. Some inserts take unique keys (of two, with one of three state
sets): the machine predicts each conflict from the jobs that hold a key, and after every step
checks that no two jobs hold one. The machine knows nothing about which store it drives.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from awa.adapters.memory import ManualClock
from awa.domain import (
    DEFAULT_UNIQUE_STATES,
    TRANSITIONS,
    CallbackNotFound,
    Cancel,
    Complete,
    CompleteCallback,
    DlqReason,
    Fail,
    FailCallback,
    IllegalTransition,
    Job,
    JobState,
    Lease,
    NewJob,
    Outcome,
    Resolution,
    ResumeCallback,
    RetryAfter,
    RetryCallback,
    Snooze,
    Trigger,
    Unique,
    UniqueConflict,
    ValidationError,
    WaitForCallback,
    decisions,
    holds_unique_key,
    rescue_cause,
    retakes_unique_key,
)
from awa.domain.backoff import _JITTER_FRACTION, BACKOFF_MAX_S
from awa.domain.retention import RETENTION_OF, Retention
from awa.domain.states import TERMINAL_STATES
from awa.domain.values import CallbackToken
from awa.ports import (
    BATCH_SIZE_MAX,
    Applied,
    ClaimStore,
    Finish,
    Heartbeat,
    QueueSettings,
    Stale,
)
from awa.testing.laws import field_disagreements

__all__ = ["STALENESS_S", "StoreFactory", "make_state_machine"]

StoreFactory = Callable[[ManualClock], ClaimStore]

STALENESS_S = 90.0
DLQ_QUEUE = "with_dlq"
PLAIN_QUEUE = "plain"
QUEUES = (DLQ_QUEUE, PLAIN_QUEUE)
_DLQ_REASONS = {reason.value for reason in DlqReason}


_OUTCOMES = st.sampled_from(
    ["complete", "retry_after", "fail", "terminal", "snooze", "cancel", "wait"]
)
_SECONDS = st.sampled_from([1, 30, 120])
#: unique keys (two times in three): one of two keys with the default, "unfinished" or every
#: state set
_KEYED = st.builds(
    lambda key, states: (key, Unique(by_args=["key"], states=states)),
    st.sampled_from(["a", "b"]),
    st.sampled_from(
        [DEFAULT_UNIQUE_STATES, frozenset(JobState) - TERMINAL_STATES, frozenset(JobState)]
    ),
)
_UNIQUE = st.one_of(st.none(), _KEYED, _KEYED)
#: what a worker's buffers send along with a heartbeat or an outcome
_PROGRESS = st.sampled_from([None, {"step": 1}, {"step": 2}])
_METADATA = st.sampled_from([None, {}, {"seen": 1}, {"seen": 2}])


class _NoJitter:
    """The prediction draws no jitter; ``_jittered`` allows for the store's."""

    def random(self) -> float:
        return 0.0


def _jittered(predicted: Job, after: Job, now: datetime) -> bool:
    """``after`` is ``predicted`` retried with backoff jitter: later by at most a quarter of
    the jitter-free delay, never beyond the cap."""
    if predicted.state is not JobState.RETRYABLE or not predicted.errors:
        return False
    base = predicted.run_at - now
    latest = min(now + base * (1 + _JITTER_FRACTION), now + timedelta(seconds=BACKOFF_MAX_S))
    return predicted.run_at <= after.run_at <= max(latest, predicted.run_at)


@attrs.define
class _Model:
    """What the machine has seen happen to one job."""

    max_run_lease: int = 0
    claims_since_reset: int = 0
    snoozes_since_reset: int = 0
    leases: list[int] = attrs.Factory(list)
    unique_key: str | None = None  # a job's key never changes


def make_state_machine(
    store_factory: StoreFactory, *, jobs_max: int = 10
) -> type[RuleBasedStateMachine]:
    """A ``RuleBasedStateMachine`` class over stores built by ``store_factory``, which gets a
    fresh ``ManualClock`` and must return an empty store using it."""

    class ClaimStoreMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.clock = ManualClock()
            self.store = store_factory(self.clock)
            self.store.set_dlq_enabled(DLQ_QUEUE, True)
            self.routed = {DLQ_QUEUE}  # queues whose failures go to the dead-letter queue
            self.retention: dict[str, QueueSettings] = {}  # what configure_queue stored
            self.failed_seen: set[int] = set()  # failed jobs whose home was checked
            self.models: dict[int, _Model] = {}
            self.callbacks: dict[str, int] = {}
            self.resolved: set[str] = set()
            self.paused: set[str] = set()

        # -- helpers --------------------------------------------------------------------------
        def _job(self, index: int) -> int:
            ids = sorted(self.models)
            return ids[index % len(ids)]

        def _lease(self, index: int) -> Lease:
            leases = [Lease(i, n) for i, m in sorted(self.models.items()) for n in m.leases]
            return leases[index % len(leases)]

        def _all(self) -> tuple[dict[int, Job], dict[int, Job]]:
            jobs = {j.id: j for j in self.store.list_jobs(limit=BATCH_SIZE_MAX)}
            dlq = {e.job.id: e.job for e in self.store.list_dlq(limit=BATCH_SIZE_MAX)}
            return jobs, dlq

        def _reset(self, job_id: int) -> None:
            model = self.models[job_id]
            model.claims_since_reset = model.snoozes_since_reset = 0

        def _holder(self, key: str | None, jobs: dict[int, Job]) -> Job | None:
            """The job among ``jobs`` (a dead letter holds no key) that holds ``key``."""
            held = [j for j in jobs.values() if holds_unique_key(j) and j.unique_key == key]
            return held[0] if key is not None and held else None

        def _expect_unchanged(self, before: Job, what: str) -> None:
            after = self.store.get_job(before.id)
            assert after == before, f"refused {what} must change nothing: {before} -> {after}"

        def _expect_state(self, predicted: Job, what: str) -> Job:
            """The store holds exactly the job the domain decided, field for field; only a
            backoff's jitter (the store's own random source) may move ``run_at`` later."""
            after = self.store.get_job(predicted.id)
            expected = predicted
            if after.run_at != predicted.run_at and _jittered(predicted, after, self.clock.now()):
                expected = attrs.evolve(predicted, run_at=after.run_at)
            assert after == expected, f"{what}: store has {after}, the domain says {predicted}"
            return after

        # -- producers ------------------------------------------------------------------------
        @initialize(
            jobs=st.lists(
                st.tuples(st.sampled_from(QUEUES), st.integers(1, 4), st.integers(1, 3)),
                min_size=2,
                max_size=4,
            )
        )
        def seed_jobs(self, jobs: list[tuple[str, int, int]]) -> None:
            # start with work on both queues so short runs still reach re-claims and rescues
            for queue, priority, max_attempts in jobs:
                self.insert(queue, priority, max_attempts, 0, None, "raise")

        @precondition(lambda self: len(self.models) < jobs_max)
        @rule(
            queue=st.sampled_from(QUEUES),
            priority=st.integers(1, 4),
            max_attempts=st.integers(1, 3),
            delay_s=st.sampled_from([0, 0, 45]),
            unique=_UNIQUE,
            on_conflict=st.sampled_from(["raise", "skip"]),
        )
        def insert(
            self,
            queue: str,
            priority: int,
            max_attempts: int,
            delay_s: int,
            unique: tuple[str, Unique] | None,
            on_conflict: str,
        ) -> None:
            run_at = self.clock.now() + timedelta(seconds=delay_s) if delay_s else None
            new = NewJob(
                kind="machine",
                queue=queue,
                priority=priority,
                max_attempts=max_attempts,
                run_at=run_at,
                args={"key": unique[0]} if unique else {},
                unique=unique[1] if unique else None,
            )
            jobs, _ = self._all()
            holder = self._holder(new.unique_key_at(run_at or self.clock.now()), jobs)
            try:
                [job] = self.store.insert([new], on_conflict=on_conflict)  # type: ignore[arg-type]
            except UniqueConflict as conflict:
                refused_for: int | None = conflict.job_id
            else:
                refused_for = None
            if refused_for is not None:
                assert holder is not None, "an insert with a free key was refused"
                assert (on_conflict, refused_for) == ("raise", holder.id)
                assert len(self._all()[0]) == len(jobs), "a refused insert inserted"
                return
            if holder is not None:
                assert on_conflict == "skip", f"job {holder.id} holds the key, yet it inserted"
                assert job == holder, "skip must answer with the holder"
                return
            assert job.id not in self.models
            assert job.state is (JobState.SCHEDULED if delay_s else JobState.AVAILABLE)
            assert holds_unique_key(job) is (unique is not None)
            self.models[job.id] = _Model(unique_key=job.unique_key)

        # -- workers --------------------------------------------------------------------------
        @rule(
            queue=st.sampled_from(QUEUES),
            limit=st.integers(1, 3),
            aging_s=st.sampled_from([0, 0, 40]),
        )
        def claim(self, queue: str, limit: int, aging_s: int) -> None:
            self._claim(queue, limit, aging_s)

        def _claim(self, queue: str, limit: int, aging_s: int = 0) -> list[Job]:
            now = self.clock.now()
            jobs, _ = self._all()
            runnable = sorted(
                (j for j in jobs.values() if j.queue == queue and decisions.is_claimable(j, now)),
                key=lambda j: decisions.claim_order(j, now, aging_s),
            )
            expected = [] if queue in self.paused else [j.id for j in runnable[:limit]]
            claimed = self.store.claim(queue, limit=limit, priority_aging_s=aging_s)
            assert [j.id for j in claimed] == expected, "claim took the wrong jobs"
            for job in claimed:
                before = jobs[job.id]
                model = self.models[job.id]
                assert job == decisions.claim(before, now), "claim must be the domain's claim"
                assert job == self.store.get_job(job.id), "claim answered other than it wrote"
                assert job.state is JobState.RUNNING
                assert job.run_lease == before.run_lease + 1 == model.max_run_lease + 1
                assert job.attempt == before.attempt + 1
                model.max_run_lease = job.run_lease
                model.claims_since_reset += 1
                model.leases.append(job.run_lease)
            return claimed

        def _fenced(
            self,
            lease: Lease,
            what: str,
            predict: Callable[[Job], Job],
            write: Callable[[], object],
        ) -> Job | None:
            """Run a lease-fenced write and check it against the domain's prediction."""
            before = self.store.get_job(lease.job_id)
            predicted: Job | None = None
            if before.run_lease == lease.run_lease:
                try:
                    predicted = predict(before)
                except (IllegalTransition, CallbackNotFound):
                    predicted = None
            result = write()
            if predicted is None:
                assert isinstance(result, Stale), f"{what} with {lease} must be stale: {result}"
                self._expect_unchanged(before, what)
                return None
            assert isinstance(result, Applied), f"{what} with {lease} must apply: {result}"
            return self._expect_state(predicted, what)

        @precondition(lambda self: any(m.leases for m in self.models.values()))
        @rule(index=st.integers(0, 200), progress=_PROGRESS, metadata=_METADATA)
        def heartbeat(
            self, index: int, progress: dict[str, int] | None, metadata: dict[str, int] | None
        ) -> None:
            lease = self._lease(index)
            now = self.clock.now()
            after = self._fenced(
                lease,
                "heartbeat",
                lambda job: decisions.heartbeat(job, now, progress, metadata),
                lambda: self.store.heartbeat([Heartbeat(lease, progress, metadata)])[0],
            )
            if after is not None:
                assert after.heartbeat_at == now

        @precondition(lambda self: any(m.leases for m in self.models.values()))
        @rule(index=st.integers(0, 200))
        def release(self, index: int) -> None:
            """A worker shutting down gives an attempt up (row 22): live or not, the store
            must agree with the domain."""
            lease = self._lease(index)
            now = self.clock.now()
            after = self._fenced(
                lease,
                "release",
                lambda job: decisions.release(job, now).job,
                lambda: self.store.release([lease])[0],
            )
            if after is not None and after.state is JobState.RETRYABLE:
                assert after.run_at == now, "a released attempt is retried at once"

        @precondition(lambda self: any(m.leases for m in self.models.values()))
        @rule(
            index=st.integers(0, 200),
            outcome=_OUTCOMES,
            seconds=_SECONDS,
            progress=_PROGRESS,
            metadata=_METADATA,
        )
        def finish(
            self,
            index: int,
            outcome: str,
            seconds: int,
            progress: dict[str, int] | None,
            metadata: dict[str, int] | None,
        ) -> None:
            """Finish through the newest lease a job had, with what the worker's buffers hold:
            live or not, the store must agree with the domain."""
            ids = sorted(i for i, m in self.models.items() if m.leases)
            job_id = ids[index % len(ids)]
            lease = Lease(job_id, self.models[job_id].leases[-1])
            self._finish(lease, outcome, seconds, progress, metadata)

        @rule(
            queue=st.sampled_from(QUEUES),
            outcomes=st.lists(st.tuples(_OUTCOMES, _SECONDS), min_size=1, max_size=3),
        )
        def claim_and_finish(self, queue: str, outcomes: list[tuple[str, int]]) -> None:
            """A worker's whole cycle in one step, so short runs reach retries and re-claims."""
            claimed = self._claim(queue, len(outcomes))
            for job, (outcome, seconds) in zip(claimed, outcomes, strict=False):
                self._finish(job.lease, outcome, seconds)

        @precondition(lambda self: any(len(m.leases) > 1 for m in self.models.values()))
        @rule(index=st.integers(0, 200), outcome=st.sampled_from(["complete", "fail", "snooze"]))
        def late_finish_with_superseded_lease(self, index: int, outcome: str) -> None:
            old = [Lease(i, n) for i, m in sorted(self.models.items()) for n in m.leases[:-1]]
            # the sharpest case first: a newer attempt is running the job right now
            live = [lease for lease in old if self.store.get_job(lease.job_id).state.is_live]
            lease = (live or old)[index % len(live or old)]
            before = self.store.get_job(lease.job_id)
            self._finish(lease, outcome, 30)
            self._expect_unchanged(before, "a late finish")

        def _finish(
            self,
            lease: Lease,
            kind: str,
            seconds: int,
            progress: dict[str, int] | None = None,
            metadata: dict[str, int] | None = None,
        ) -> None:
            now = self.clock.now()
            before = self.store.get_job(lease.job_id)
            if (
                kind == "wait"
                and before.run_lease == lease.run_lease
                and before.callback_id is None
            ):
                self._register(lease)
                before = self.store.get_job(lease.job_id)
            callback_id = before.callback_id or "never-registered"
            outcomes: dict[str, Outcome] = {
                "complete": Complete(),
                "retry_after": RetryAfter(seconds),
                "fail": Fail("ValueError: machine"),
                "terminal": Fail("TerminalError: machine", terminal=True),
                "snooze": Snooze(seconds),
                "cancel": Cancel("machine cancel"),
                "wait": WaitForCallback(CallbackToken(callback_id, lease, now)),
            }
            outcome = outcomes[kind]
            after = self._fenced(
                lease,
                f"finish {kind}",
                lambda job: (
                    decisions.finish(job, outcome, now, _NoJitter(), progress, metadata).job
                ),
                lambda: self.store.finish([Finish(lease, outcome, progress, metadata)])[0],
            )
            if after is None:
                return
            if kind == "snooze":
                self.models[lease.job_id].snoozes_since_reset += 1
                assert after.attempt == before.attempt - 1, "snooze must not spend an attempt"

        def _register(self, lease: Lease) -> None:
            now = self.clock.now()
            cid = f"cb-{lease.job_id}-{lease.run_lease}-{len(self.callbacks)}"
            after = self._fenced(
                lease,
                "register_callback",
                lambda job: decisions.register_callback(job, cid, 60.0, now),
                lambda: self.store.register_callback(lease, timeout_s=60.0, callback_id=cid),
            )
            if after is not None:
                assert after.callback_id == cid
                self.callbacks[cid] = lease.job_id

        @precondition(lambda self: any(m.leases for m in self.models.values()))
        @rule(index=st.integers(0, 200))
        def register_callback(self, index: int) -> None:
            self._register(self._lease(index))

        # -- the external side ----------------------------------------------------------------
        @precondition(lambda self: bool(self.callbacks))
        @rule(
            index=st.integers(0, 200),
            kind=st.sampled_from(["resume", "complete", "fail", "retry", "heartbeat"]),
        )
        def resolve_callback(self, index: int, kind: str) -> None:
            ids = sorted(self.callbacks)
            cid = ids[index % len(ids)]
            before = self.store.get_job(self.callbacks[cid])
            now = self.clock.now()
            resolutions: dict[str, Resolution] = {
                "resume": ResumeCallback({"n": index}),
                "complete": CompleteCallback(None),
                "fail": FailCallback("external failure"),
                "retry": RetryCallback(),
            }
            predicted: Job | None
            try:
                if kind == "heartbeat":
                    predicted = decisions.heartbeat_callback(before, cid, 60.0, now)
                else:
                    predicted = decisions.resolve_callback(before, cid, resolutions[kind], now).job
            except CallbackNotFound:
                predicted = None
            if cid in self.resolved:
                assert predicted is None, "the domain would resolve a callback twice"
            try:
                if kind == "heartbeat":
                    self.store.heartbeat_callback(cid, timeout_s=60.0)
                else:
                    self.store.resolve_callback(cid, resolutions[kind])
            except CallbackNotFound:
                assert predicted is None, f"{kind} of pending callback {cid} was refused"
                self._expect_unchanged(before, f"callback {kind}")
                return
            assert predicted is not None, f"callback {cid} answered {kind} twice or when stale"
            self._expect_state(predicted, f"callback {kind}")
            if kind != "heartbeat":
                self.resolved.add(cid)
            if kind == "retry":
                self._reset(before.id)

        # -- time and maintenance -------------------------------------------------------------
        @rule(seconds=st.sampled_from([1, 10, 60, 100, 700, 4000]))
        def advance_clock(self, seconds: int) -> None:
            self.clock.advance(seconds)

        @rule()
        def rescue(self) -> None:
            now = self.clock.now()
            jobs, _ = self._all()
            expected = {
                j.id: decisions.rescue(j, cause, now, _NoJitter()).job
                for j in jobs.values()
                if (cause := rescue_cause(j, now, STALENESS_S)) is not None
            }
            rescued = self.store.rescue(staleness_s=STALENESS_S, limit=BATCH_SIZE_MAX)
            assert sorted(r.job.id for r in rescued) == sorted(expected), "rescued the wrong jobs"
            for r in rescued:
                self._expect_state(expected[r.job.id], f"rescue ({r.cause.name})")
                assert r.job.errors[-1].error == r.cause.error

        @rule()
        def promote(self) -> None:
            now = self.clock.now()
            jobs, _ = self._all()
            due = {
                j.id
                for j in jobs.values()
                if j.state in (JobState.SCHEDULED, JobState.RETRYABLE) and j.run_at <= now
            }
            promoted = self.store.promote(limit=BATCH_SIZE_MAX)
            assert {j.id for j in promoted} == due
            for job in promoted:
                assert job == self._expect_state(decisions.promote(jobs[job.id], now), "promote")

        # -- operators ------------------------------------------------------------------------
        def _operator(self, job_id: int, trigger: Trigger, action: Callable[[], Job]) -> None:
            jobs, dlq = self._all()
            before = jobs.get(job_id) or dlq[job_id]
            allowed = (before.state, trigger) in TRANSITIONS and not (
                trigger is Trigger.CANCEL and job_id in dlq
            )
            holder = None
            if allowed and trigger is Trigger.OPERATOR_RETRY:
                retried = decisions.operator_retry(before, self.clock.now())
                owned = before if job_id in jobs else None  # a dead letter holds no key
                if retakes_unique_key(owned, retried):
                    holder = self._holder(retried.unique_key, jobs)
            try:
                after = action()
            except IllegalTransition:
                assert not allowed, f"{trigger} of {before.state} job was refused"
                self._expect_unchanged(before, str(trigger))
                return
            except UniqueConflict as conflict:
                refused_for: int | None = conflict.job_id
            else:
                refused_for = None
            if refused_for is not None:
                assert holder is not None, f"{trigger} of job {job_id} refused, its key is free"
                assert refused_for == holder.id
                self._expect_unchanged(before, str(trigger))
                return
            assert holder is None, f"{trigger} took the key job {holder} holds"
            assert allowed, f"{trigger} of a {before.state} job was applied"
            now = self.clock.now()
            if trigger is Trigger.CANCEL:
                predicted = decisions.cancel(before, now).job
            else:
                predicted = decisions.operator_retry(before, now)
            assert after == self._expect_state(predicted, str(trigger))

        @precondition(lambda self: bool(self.models))
        @rule(index=st.integers(0, 200))
        def cancel(self, index: int) -> None:
            job_id = self._job(index)
            self._operator(job_id, Trigger.CANCEL, lambda: self.store.cancel(job_id))

        @precondition(lambda self: bool(self.models))
        @rule(index=st.integers(0, 200))
        def operator_retry(self, index: int) -> None:
            job_id = self._job(index)
            before = self.store.get_job(job_id)
            self._operator(job_id, Trigger.OPERATOR_RETRY, lambda: self.store.retry(job_id))
            if self.store.get_job(job_id) != before:
                self._reset(job_id)

        @rule(queue=st.sampled_from(QUEUES))
        def bulk_retry_from_dlq(self, queue: str) -> None:
            jobs, dlq = self._all()
            entries = sorted(
                (e for e in self.store.list_dlq(limit=BATCH_SIZE_MAX) if e.job.queue == queue),
                key=lambda e: (e.dlq_at, e.job.id),
            )
            expected, taken = set(), {j.unique_key for j in jobs.values() if holds_unique_key(j)}
            for entry in entries:  # each takes its key back, unless a job already holds it
                again = decisions.operator_retry(entry.job, self.clock.now())
                if holds_unique_key(again) and again.unique_key in taken:
                    continue
                taken.add(again.unique_key)
                expected.add(entry.job.id)
            retried = self.store.bulk_retry_from_dlq(queue=queue)
            assert {j.id for j in retried} == expected
            now = self.clock.now()
            for job in retried:
                predicted = decisions.operator_retry(dlq[job.id], now)
                assert job == self._expect_state(predicted, "dead-letter retry")
                self._reset(job.id)

        @rule(queue=st.sampled_from(QUEUES), paused=st.sampled_from([True, False, False]))
        def pause_or_resume(self, queue: str, paused: bool) -> None:
            if paused:
                self.store.pause_queue(queue)
                self.paused.add(queue)
            else:
                self.store.resume_queue(queue)
                self.paused.discard(queue)

        @rule(
            queue=st.sampled_from(QUEUES),
            dlq_enabled=st.sampled_from([None, True, False]),
            finished_s=st.sampled_from([None, 60, 3600]),
            dlq_s=st.sampled_from([None, 60, 3600]),
            failed_s=st.sampled_from([None, None, 60, 3600]),
        )
        def configure_queue(
            self,
            queue: str,
            dlq_enabled: bool | None,
            finished_s: int | None,
            dlq_s: int | None,
            failed_s: int | None,
        ) -> None:
            before = self.retention.get(
                queue, QueueSettings(queue, dlq_enabled=queue in self.routed)
            )
            try:
                settings = self.store.configure_queue(
                    queue,
                    dlq_enabled=dlq_enabled,
                    finished_retention_s=finished_s,
                    dlq_retention_s=dlq_s,
                    failed_retention_s=failed_s,
                )
            except ValidationError:
                assert (dlq_enabled, finished_s, dlq_s, failed_s) == (None, None, None, None)
                return
            expected = attrs.evolve(
                before,
                paused=queue in self.paused,
                dlq_enabled=before.dlq_enabled if dlq_enabled is None else dlq_enabled,
                finished_retention_s=before.finished_retention_s
                if finished_s is None
                else float(finished_s),
                dlq_retention_s=before.dlq_retention_s if dlq_s is None else float(dlq_s),
                failed_retention_s=before.failed_retention_s
                if failed_s is None
                else float(failed_s),
            )
            assert settings == expected, f"{settings} stored, {expected} asked for"
            self.retention[queue] = settings
            (self.routed.add if settings.dlq_enabled else self.routed.discard)(queue)

        def _kept_s(self, queue: str, default_s: float, setting: str) -> float:
            """How long ``queue`` keeps what its ``setting`` (a ``QueueSettings`` retention)
            covers: its own, or the default."""
            settings = self.retention.get(queue)
            own = None if settings is None else getattr(settings, setting)
            return default_s if own is None else float(own)

        @rule(
            older_than_s=st.sampled_from([0, 100, 5000]),
            failed_older_than_s=st.sampled_from([None, 0, 100, 5000]),
        )
        def delete_finished(self, older_than_s: int, failed_older_than_s: int | None) -> None:
            """Exactly the finished jobs past their queue's retention go (one at the very
            cutoff may go or stay), and nothing else: completed jobs held to the queue's
            finished retention, failed and cancelled ones to its failed one
            (``awa.domain.retention``)."""
            now = self.clock.now()
            jobs, _ = self._all()
            default_s = {
                Retention.COMPLETED: older_than_s,
                Retention.FAILED: older_than_s
                if failed_older_than_s is None
                else failed_older_than_s,
            }
            past, at_cutoff = set(), set()
            for job in jobs.values():
                if not job.state.is_terminal or job.finalized_at is None:
                    continue
                retention = RETENTION_OF[job.state]
                kept_s = self._kept_s(job.queue, default_s[retention], retention.value)
                cutoff = now - timedelta(seconds=kept_s)
                if job.finalized_at < cutoff:
                    past.add(job.id)
                elif job.finalized_at == cutoff:
                    at_cutoff.add(job.id)
            deleted = self.store.delete_finished(
                older_than_s=older_than_s,
                failed_older_than_s=failed_older_than_s,
                limit=BATCH_SIZE_MAX,
            )
            after, _ = self._all()
            gone = set(jobs) - set(after)
            assert past <= gone <= past | at_cutoff, f"deleted {gone}, expected {past}"
            assert deleted == len(gone)
            self._forget(gone)

        @rule(older_than_s=st.sampled_from([0, 100, 5000]))
        def expire_dlq(self, older_than_s: int) -> None:
            """Row 21 by retention: exactly the dead letters past their queue's retention."""
            now = self.clock.now()
            entries = self.store.list_dlq(limit=BATCH_SIZE_MAX)
            past, at_cutoff = set(), set()
            for entry in entries:
                kept_s = self._kept_s(entry.job.queue, older_than_s, "dlq_retention_s")
                cutoff = now - timedelta(seconds=kept_s)
                if entry.dlq_at < cutoff:
                    past.add(entry.job.id)
                elif entry.dlq_at == cutoff:
                    at_cutoff.add(entry.job.id)
            expired = self.store.expire_dlq(older_than_s=older_than_s, limit=BATCH_SIZE_MAX)
            _, after = self._all()
            gone = {entry.job.id for entry in entries} - set(after)
            assert past <= gone <= past | at_cutoff, f"expired {gone}, expected {past}"
            assert expired == len(gone)
            self._forget(gone)

        def _forget(self, job_ids: set[int]) -> None:
            """Deleted jobs: nothing refers to them any more."""
            for job_id in job_ids:
                del self.models[job_id]
                self.failed_seen.discard(job_id)
            self.callbacks = {c: j for c, j in self.callbacks.items() if j not in job_ids}

        @precondition(lambda self: bool(self.models))
        @rule(index=st.integers(0, 200))
        def probe_leases_that_do_not_own_the_job(self, index: int) -> None:
            """Every lease but a live job's current one is refused and changes nothing."""
            job_id = self._job(index)
            before = self.store.get_job(job_id)
            model = self.models[job_id]
            probes = [n for n in model.leases if n != before.run_lease or not before.state.is_live]
            for n in probes:
                result = self.store.heartbeat([Heartbeat(Lease(job_id, n))])[0]
                assert isinstance(result, Stale), f"lease {n} of a {before.state} job is not live"
            self._expect_unchanged(before, "heartbeat with a lease that does not own the job")

        @precondition(lambda self: bool(self.models))
        @rule(key=st.sampled_from(["a", "b"]))
        def cancel_by_unique_key(self, key: str) -> None:
            jobs, _ = self._all()
            probe = NewJob(kind="machine", args={"key": key}, unique=Unique(by_args=["key"]))
            holder = self._holder(probe.unique_key_at(self.clock.now()), jobs)
            try:
                cancelled = self.store.cancel_by_unique_key(probe)
            except IllegalTransition:
                assert holder is not None, "nothing holds the key, yet something was refused"
                assert holder.state.is_terminal
                self._expect_unchanged(holder, "cancel of a finished holder")
                return
            if holder is None:
                assert cancelled is None, f"cancelled job {cancelled} though nothing holds the key"
                return
            assert cancelled is not None, f"job {holder.id} holds the key and was not cancelled"
            assert (cancelled.id, cancelled.state) == (holder.id, JobState.CANCELLED)

        # -- invariants -----------------------------------------------------------------------
        @invariant()
        def laws_hold(self) -> None:
            jobs, dlq = self._all()
            assert not set(jobs) & set(dlq), "a job is in two homes"
            held = [str(j.unique_key) for j in jobs.values() if holds_unique_key(j)]
            assert len(held) == len(set(held)), f"two jobs hold one unique key: {sorted(held)}"
            assert set(jobs) | set(dlq) == set(self.models), "a job was lost"
            for entry in self.store.list_dlq(limit=BATCH_SIZE_MAX):
                assert entry.job.state is JobState.FAILED
                assert entry.reason in _DLQ_REASONS
            for job in (*jobs.values(), *dlq.values()):
                model = self.models[job.id]
                assert job.unique_key == model.unique_key, "a job's unique key changed"
                assert job.run_lease == model.max_run_lease, "run_lease moved without a claim"
                assert job.attempt == model.claims_since_reset - model.snoozes_since_reset, (
                    f"job {job.id}: attempt {job.attempt} but {model.claims_since_reset} claims"
                    f" and {model.snoozes_since_reset} snoozes since the last reset"
                )
                assert 0 <= job.attempt <= job.max_attempts
                if job.state.is_live:
                    assert job.run_lease >= 1
                    assert job.attempt >= 1
                else:
                    assert job.callback_id is None
                    assert job.deadline_at is None
                if job.state is JobState.WAITING_EXTERNAL:
                    assert job.callback_id is not None
            # a job that has just failed went where its queue's routing said, at that moment
            failed = {
                j.id: j for j in (*jobs.values(), *dlq.values()) if j.state is JobState.FAILED
            }
            for job_id in failed.keys() - self.failed_seen:
                routed = failed[job_id].queue in self.routed
                assert (job_id in dlq) == routed, (
                    f"job {job_id} failed on queue {failed[job_id].queue} (DLQ"
                    f" {'on' if routed else 'off'}) and is {'' if job_id in dlq else 'not '}in it"
                )
            self.failed_seen = set(failed)

        @invariant()
        def fields_agree_with_states(self) -> None:
            """No path leaves a field its state disallows (``awa.testing.laws``)."""
            jobs, dlq = self._all()
            problems = [p for j in (*jobs.values(), *dlq.values()) for p in field_disagreements(j)]
            assert not problems, "; ".join(problems)

    ClaimStoreMachine.__name__ = ClaimStoreMachine.__qualname__ = "ClaimStoreMachine"
    return ClaimStoreMachine
