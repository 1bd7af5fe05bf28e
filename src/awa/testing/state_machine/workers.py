"""The machine's workers: claims, heartbeats, releases and finishes through live and old
leases, and the callbacks an attempt registers.

Each rule predicts the store's answer from the pure domain before calling the store
(``MachineBase._fenced``), so a store that applies a write the lease should have fenced off,
or claims the wrong job, fails here.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from awa.domain import Job, JobState, Lease, decisions
from awa.domain import outcomes as o
from awa.domain.values import CallbackToken
from awa.ports import Finish, Heartbeat, Stale
from awa.testing.state_machine.base import QUEUES, MachineBase, NoJitter

__all__ = ["WorkerRules"]

_OUTCOMES = st.sampled_from(
    ["complete", "retry_after", "fail", "terminal", "snooze", "cancel", "wait"]
)
_SECONDS = st.sampled_from([1, 30, 120])
#: what a worker's buffers send along with a heartbeat or an outcome
_PROGRESS = st.sampled_from([None, {"step": 1}, {"step": 2}])
_METADATA = st.sampled_from([None, {}, {"seen": 1}, {"seen": 2}])


class WorkerRules(MachineBase):
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
            (j for j in jobs.values() if j.queue == queue and _ordering_free(j, jobs, now)),
            key=lambda j: decisions.claim_order(j, now, aging_s),
        )
        slots = self._slots(queue, limit)  # before the claim: it counts live attempts
        claimed = self.store.claim(queue, limit=limit, priority_aging_s=aging_s)
        if queue in self.paused:
            assert claimed == [], "a paused queue's claim took jobs"
        elif queue in self.key_limits:
            self._check_keyed(queue, slots, runnable, claimed, jobs)
        else:
            expected = [j.id for j in runnable[:slots]]
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

    def _slots(self, queue: str, limit: int) -> int:
        """How many jobs a claim of ``limit`` may start on ``queue``: all it asks for, or as
        many as its concurrency limit leaves free (none when live attempts are at or over
        it). The claim must take exactly that many when that many are runnable: the limit
        holds, and holds back nothing it need not."""
        cap = self.concurrency_limits.get(queue)
        if cap is None:
            return limit
        jobs, _ = self._all()
        live = sum(1 for j in jobs.values() if j.queue == queue and j.state.is_live)
        return max(0, min(limit, cap - live))

    def _check_keyed(
        self,
        queue: str,
        slots: int,
        runnable: list[Job],
        claimed: list[Job],
        jobs: dict[int, Job],
    ) -> None:
        """A claim of a queue with a key limit: which keys' turn it was depends on the turn
        cursor, so the machine checks what must hold whoever's turn: only runnable jobs,
        each key's first in claim order, no key past its limit (nor past what it ran
        already, when a lowered limit left it over), and as many as the limits leave free
        (a job is held back only by a limit it is under). ``slots``: what the queue's own
        limits leave the claim (``_slots``), ``jobs`` as they were before it."""
        cap = self.key_limits[queue]
        live = Counter(
            j.concurrency_key for j in jobs.values() if j.queue == queue and j.state.is_live
        )
        by_key: dict[str | None, list[int]] = {}
        for job in runnable:
            by_key.setdefault(job.concurrency_key, []).append(job.id)
        taken: dict[str | None, list[int]] = {}
        for job in claimed:
            taken.setdefault(job.concurrency_key, []).append(job.id)
        free = 0
        for key, ids in by_key.items():
            room = len(ids) if key is None else max(0, cap - live[key])
            assert len(taken.get(key, [])) <= room, f"key {key!r} went past its limit"
            assert sorted(taken.get(key, [])) == sorted(ids[: len(taken.get(key, []))]), (
                f"key {key!r}: a claim passed over the key's first job in claim order"
            )
            free += min(len(ids), room)
        assert set(taken) <= set(by_key), "claim took a job that was not runnable"
        assert len(claimed) == min(slots, free), "claim held back jobs"

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
        if kind == "wait" and before.run_lease == lease.run_lease and before.callback_id is None:
            self._register(lease)
            before = self.store.get_job(lease.job_id)
        callback_id = before.callback_id or "never-registered"
        outcomes: dict[str, o.Outcome] = {
            "complete": o.Complete(),
            "retry_after": o.RetryAfter(seconds),
            "fail": o.Fail("ValueError: machine"),
            "terminal": o.Fail("TerminalError: machine", terminal=True),
            "snooze": o.Snooze(seconds),
            "cancel": o.Cancel("machine cancel"),
            "wait": o.WaitForCallback(CallbackToken(callback_id, lease, now)),
        }
        outcome = outcomes[kind]
        after = self._fenced(
            lease,
            f"finish {kind}",
            lambda job: decisions.finish(job, outcome, now, NoJitter(), progress, metadata).job,
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


def _ordering_free(job: Job, jobs: dict[int, Job], now: datetime) -> bool:
    """Claimable, and free to start by its ordering key: its key's oldest unfinished job,
    with no attempt of the key live (``RowTransaction.claim_candidates``)."""
    if not decisions.is_claimable(job, now):
        return False
    if job.ordering_key is None:
        return True
    same = [j for j in jobs.values() if (j.queue, j.ordering_key) == (job.queue, job.ordering_key)]
    unfinished = [j for j in same if not j.state.is_terminal]
    return not any(j.state.is_live for j in same) and min(j.id for j in unfinished) == job.id
