"""The store agreement program: the same random steps, applied to the in-memory store (the
reference) and to another store, both on a manual clock with the same seeded random source:
every answer and every job must agree, as whole values (states, attempts, leases, errors,
timestamps), not just states.

Both stores draw callback ids from their ``rng`` in the same order. Jitter is fixed at half
its range (``HalfJitter``). The domain checks a write's legality before it draws any jitter
(``decisions.rescue``, and ``decisions.finish`` through ``_fail_attempt``, ask the transition
table first), and every store decides its retries and rescues through those functions, in
request or id order, so a refused write draws nothing on either side. Fixing the value keeps
the comparison from leaning on that alignment: a draw then leaves the seeded state alone, so
the callback ids stay in step whatever the count and order of draws, and a retry's ``run_at``
is the same on both sides.

A test builds both stores with ``HalfJitter(SEED)`` and hands lists of ``insert_step`` and
``program_step`` (Hypothesis strategies) to ``assert_stores_agree``;
``tests/postgres/test_agreement.py`` and ``tests/sqlite/test_agreement.py`` are two.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from awa.adapters.memory import ManualClock
from awa.domain import AwaError, Job, JobState, Lease, NewJob
from awa.domain import outcomes as o
from awa.domain.values import CallbackToken
from awa.ports import BATCH_SIZE_MAX, ClaimStore, Finish, Heartbeat

__all__ = [
    "QUEUES",
    "SEED",
    "AgreementProgram",
    "HalfJitter",
    "assert_stores_agree",
    "insert_step",
    "program_step",
]

QUEUES = ("alpha", "beta")
SEED = 11

Step = tuple[Any, ...]


class HalfJitter(random.Random):
    """Seeded for callback ids; every jitter draw is 0.5."""

    def random(self) -> float:
        return 0.5


insert_step = st.tuples(
    st.just("insert"),
    st.sampled_from(QUEUES),
    st.integers(1, 4),
    st.integers(1, 3),
    st.sampled_from([0, 0, 45]),
)
_claim = st.tuples(st.just("claim"), st.sampled_from(QUEUES), st.integers(1, 3))
_finish = st.tuples(
    st.just("finish"),
    st.integers(0, 50),
    st.sampled_from(["complete", "retry", "fail", "terminal", "snooze", "cancel", "wait"]),
)
# claims and finishes are listed twice: most interesting states lie behind a claim
program_step = st.one_of(
    insert_step,
    _claim,
    _claim,
    _finish,
    _finish,
    st.tuples(st.just("finish_batch"), st.lists(st.integers(0, 50), min_size=1, max_size=4)),
    st.tuples(st.just("heartbeat"), st.lists(st.integers(0, 50), min_size=1, max_size=3)),
    st.tuples(st.just("register_callback"), st.integers(0, 50)),
    st.tuples(
        st.just("resolve"),
        st.integers(0, 50),
        st.sampled_from(["resume", "complete", "fail", "retry", "extend"]),
    ),
    st.tuples(st.just("advance"), st.sampled_from([1, 30, 100, 400, 4000])),
    st.tuples(st.just("rescue"), st.integers(1, 3)),
    st.tuples(st.just("promote")),
    st.tuples(st.just("cancel"), st.integers(0, 50)),
    st.tuples(st.just("retry"), st.integers(0, 50)),
    st.tuples(st.just("bulk_retry_from_dlq"), st.sampled_from(QUEUES)),
    st.tuples(st.just("pause"), st.sampled_from(QUEUES), st.booleans()),
    st.tuples(st.just("dlq_enabled"), st.sampled_from(QUEUES), st.booleans()),
    st.tuples(st.just("release"), st.lists(st.integers(0, 50), min_size=1, max_size=3)),
    st.tuples(
        st.just("configure"),
        st.sampled_from(QUEUES),
        st.sampled_from([None, True, False]),
        st.sampled_from([None, 60, 3600]),
        st.sampled_from([None, 60, 3600]),
    ),
    st.tuples(st.just("delete_finished"), st.sampled_from([0, 100, 5000]), st.integers(1, 3)),
    st.tuples(st.just("expire_dlq"), st.sampled_from([0, 100, 5000]), st.integers(1, 3)),
    st.tuples(
        st.just("count_jobs"),
        st.sampled_from([None, *QUEUES]),
        st.sampled_from([None, JobState.AVAILABLE, JobState.FAILED]),
    ),
)


def _outcome(kind: str, job: Job) -> o.Outcome:
    if kind == "wait":
        token = CallbackToken(job.callback_id or "never-registered", job.lease, job.run_at)
        return o.WaitForCallback(token)
    outcomes: dict[str, o.Outcome] = {
        "complete": o.Complete(),
        "retry": o.RetryAfter(30),
        "fail": o.Fail("boom"),
        "terminal": o.Fail("bad input", terminal=True),
        "snooze": o.Snooze(60),
        "cancel": o.Cancel("not needed"),
    }
    return outcomes[kind]


_RESOLUTIONS: dict[str, o.Resolution] = {
    "resume": o.ResumeCallback({"ok": 1}),
    "complete": o.CompleteCallback("done"),
    "fail": o.FailCallback("refused"),
    "retry": o.RetryCallback(),
}


class AgreementProgram:
    """Applies one step to a store; leases and callback ids come from the reference's answers,
    which are the same values the other store must give."""

    def __init__(self) -> None:
        self.leases: list[Lease] = []
        self.callbacks: list[str] = []
        self.job_ids: list[int] = []

    def _pick(self, items: list[Any], index: int) -> Any:
        return items[index % len(items)] if items else None

    def run(self, store: ClaimStore, clock: ManualClock, step: Step) -> Any:
        name, *args = step
        if name == "insert":
            queue, priority, max_attempts, delay_s = args
            run_at = clock.now() + timedelta(seconds=delay_s)
            new = NewJob(
                kind="work",
                queue=queue,
                priority=priority,
                max_attempts=max_attempts,
                run_at=run_at if delay_s else None,
            )
            return store.insert([new])
        if name == "claim":
            return store.claim(args[0], limit=args[1], deadline_duration_s=300)
        if name in ("finish", "finish_batch", "heartbeat", "register_callback", "release"):
            picks = args[0] if isinstance(args[0], list) else [args[0]]
            leases = [self._pick(self.leases, i) for i in picks]
            if any(lease is None for lease in leases):
                return "no lease"
            if name == "heartbeat":
                return store.heartbeat([Heartbeat(lease, progress={"n": 1}) for lease in leases])
            if name == "release":
                return store.release(leases)
            if name == "register_callback":
                return store.register_callback(leases[0], timeout_s=600)
            kinds = [args[1]] if name == "finish" else ["complete", "fail", "retry", "wait"]
            finishes = [
                Finish(lease, _outcome(kinds[i % len(kinds)], self._current(store, lease)))
                for i, lease in enumerate(leases)
            ]
            return store.finish(finishes)
        if name == "resolve":
            callback_id = self._pick(self.callbacks, args[0])
            if callback_id is None:
                return "no callback"
            if args[1] == "extend":
                return store.heartbeat_callback(callback_id, timeout_s=900)
            return store.resolve_callback(callback_id, _RESOLUTIONS[args[1]])
        if name == "advance":
            clock.advance(args[0])
            return None
        if name == "rescue":
            return store.rescue(staleness_s=90, limit=args[0])
        if name == "promote":
            return store.promote()
        if name in ("cancel", "retry"):
            job_id = self._pick(self.job_ids, args[0])
            if job_id is None:
                return "no job"
            return store.cancel(job_id) if name == "cancel" else store.retry(job_id)
        if name == "bulk_retry_from_dlq":
            return store.bulk_retry_from_dlq(queue=args[0])
        if name == "pause":
            (store.pause_queue if args[1] else store.resume_queue)(args[0])
            return None
        if name == "dlq_enabled":
            store.set_dlq_enabled(args[0], args[1])
            return None
        if name == "configure":
            queue, dlq_enabled, finished_s, dlq_s = args
            return store.configure_queue(
                queue,
                dlq_enabled=dlq_enabled,
                finished_retention_s=finished_s,
                dlq_retention_s=dlq_s,
            )
        if name == "delete_finished":
            return store.delete_finished(older_than_s=args[0], limit=args[1])
        if name == "expire_dlq":
            return store.expire_dlq(older_than_s=args[0], limit=args[1])
        if name == "count_jobs":
            return store.count_jobs(queue=args[0], state=args[1])
        raise AssertionError(name)

    def _current(self, store: ClaimStore, lease: Lease) -> Job:
        """The job the finish is about, for a WaitForCallback token; a stand-in when gone."""
        try:
            return store.get_job(lease.job_id)
        except AwaError:
            epoch = datetime(2030, 1, 1, tzinfo=timezone.utc)
            return Job(
                id=lease.job_id, kind="gone", queue="gone", args={}, state=JobState.RUNNING,
                priority=2, attempt=1, max_attempts=1, run_lease=lease.run_lease,
                run_at=epoch, created_at=epoch,
            )  # fmt: skip

    def learn(self, answer: Any) -> None:
        """Remember the leases, callbacks and ids the reference handed out."""
        values = answer if isinstance(answer, list) else [answer]
        for value in values:
            job = value if isinstance(value, Job) else getattr(value, "job", None)
            if isinstance(job, Job):
                if job.id not in self.job_ids:
                    self.job_ids.append(job.id)
                if job.run_lease and job.lease not in self.leases:
                    self.leases.append(job.lease)
                if job.callback_id and job.callback_id not in self.callbacks:
                    self.callbacks.append(job.callback_id)

    def answer(self, store: ClaimStore, clock: ManualClock, step: Step) -> Any:
        """The step's answer, or which ``AwaError`` it raised."""
        try:
            return self.run(store, clock, step)
        except AwaError as exc:
            return ("raised", type(exc).__name__)


def _everything(store: ClaimStore) -> tuple[list[Job], list[Any]]:
    return store.list_jobs(limit=BATCH_SIZE_MAX), store.list_dlq(limit=BATCH_SIZE_MAX)


def assert_stores_agree(
    reference: tuple[ClaimStore, ManualClock],
    other: tuple[ClaimStore, ManualClock],
    name: str,
    program: Sequence[Step],
) -> None:
    """Run ``program`` on the reference (the memory store) and on ``other`` (called ``name``
    in a failure), each on its own clock: after every step both gave the same answer and hold
    the same jobs and dead letters."""
    (memory, memory_clock), (store, store_clock) = reference, other
    steps_run = AgreementProgram()
    for number, step in enumerate(program):
        expected = steps_run.answer(memory, memory_clock, step)
        actual = steps_run.answer(store, store_clock, step)
        assert actual == expected, f"step {number} {step}: {name} {actual!r} != {expected!r}"
        steps_run.learn(expected)
        assert _everything(store) == _everything(memory), f"after step {number} {step}"
