"""Put a job in any state, and fire any trigger at it, through a store's public verbs.

The generated part of the contract suite walks every ``(state, trigger)`` pair with these.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

import attrs

from awa.domain import CallbackNotFound, IllegalTransition, Job, JobState, NewJob, Trigger, Unique
from awa.domain import outcomes as o
from awa.domain.values import CallbackToken
from awa.ports import Applied, ClaimStore, Finish, Heartbeat, Stale

__all__ = [
    "CALLBACK_TIMEOUT_S",
    "STALENESS_S",
    "Driven",
    "Fired",
    "TickingClock",
    "drive_to",
    "fire",
]

STALENESS_S = 90.0
CALLBACK_TIMEOUT_S = 600.0
_FAR_S = 3600.0
_queue_numbers = itertools.count(1)


class TickingClock(Protocol):
    """What the scenarios need from a test clock (``ManualClock`` is one)."""

    def now(self) -> datetime: ...

    def advance(self, seconds: float) -> object: ...


@attrs.frozen
class Driven:
    """A job put in a state, with the callback it has pending, if any."""

    job: Job
    callback_id: str | None = None


@attrs.frozen
class Fired:
    """What happened when a trigger was fired: the job's value before and after."""

    accepted: bool
    before: Job
    after: Job
    detail: str


def _fresh_queue() -> str:
    return f"contract_{next(_queue_numbers)}"


def drive_to(
    store: ClaimStore,
    clock: TickingClock,
    state: JobState,
    *,
    max_attempts: int = 5,
    queue: str | None = None,
    unique: Unique | None = None,
) -> Driven:
    """A new job in ``state``, reached through the store's verbs only. Each job gets its own
    queue (unless one is given) so claims in the scenario touch nothing else; with ``unique``
    it takes a key (of kind ``scenario`` and empty args, unless the key ignores them)."""
    queue = queue or _fresh_queue()
    new = NewJob(kind="scenario", queue=queue, max_attempts=max_attempts, unique=unique)
    if state is JobState.SCHEDULED:
        [job] = store.insert([attrs.evolve(new, run_at=clock.now() + timedelta(seconds=_FAR_S))])
        return Driven(job)
    [job] = store.insert([new])
    if state is JobState.AVAILABLE:
        return Driven(job)
    if state is JobState.CANCELLED:
        return Driven(store.cancel(job.id))
    [job] = store.claim(queue, limit=1)
    if state is JobState.RUNNING:
        return Driven(job)
    if state is JobState.WAITING_EXTERNAL:
        registered = _applied(store.register_callback(job.lease, timeout_s=CALLBACK_TIMEOUT_S))
        token = CallbackToken(registered.callback_id or "", job.lease, job.run_at)
        parked = _applied(store.finish([Finish(job.lease, o.WaitForCallback(token))])[0])
        return Driven(parked, registered.callback_id)
    outcomes: dict[JobState, o.Outcome] = {
        JobState.RETRYABLE: o.RetryAfter(_FAR_S),
        JobState.COMPLETED: o.Complete(),
        JobState.FAILED: o.Fail("scenario failure", terminal=True),
    }
    outcome = outcomes[state]
    return Driven(_applied(store.finish([Finish(job.lease, outcome)])[0]))


def _applied(result: Applied | Stale) -> Job:
    if not isinstance(result, Applied):
        raise AssertionError(f"scenario set-up write was refused: {result}")
    return result.job


def fire(store: ClaimStore, clock: TickingClock, trigger: Trigger, driven: Driven) -> Fired:
    """Fire ``trigger`` at the job through the matching store verb. ``accepted`` says whether
    the store carried it out; a refusal must leave the job exactly as it was."""
    job = driven.job
    before = store.get_job(job.id)
    lease = before.lease
    callback_id = driven.callback_id or before.callback_id
    accepted: bool
    detail = ""

    def finish(outcome: o.Outcome) -> bool:
        result = store.finish([Finish(lease, outcome)])[0]
        return isinstance(result, Applied)

    def resolve(resolution: o.Resolution) -> bool:
        try:
            store.resolve_callback(cid, resolution)
        except CallbackNotFound:
            return False
        return True

    def operator(action: Callable[[], object]) -> bool:
        try:
            action()
        except IllegalTransition as exc:
            nonlocal detail
            detail = str(exc)
            return False
        return True

    # callback triggers on a running job need a registered callback; elsewhere use whatever
    # id the job has, or one nobody issued
    if trigger in _CALLBACK_TRIGGERS and before.state is JobState.RUNNING and not callback_id:
        callback_id = _applied(store.register_callback(lease)).callback_id
        before = store.get_job(job.id)
    cid = callback_id or str(uuid.uuid4())

    if trigger is Trigger.PROMOTE:
        clock.advance(_FAR_S + 1)
        accepted = any(j.id == job.id for j in store.promote(limit=1000))
    elif trigger is Trigger.CLAIM:
        accepted = any(j.id == job.id for j in store.claim(job.queue, limit=10))
    elif trigger is Trigger.HEARTBEAT:
        accepted = isinstance(store.heartbeat([Heartbeat(lease)])[0], Applied)
    elif trigger is Trigger.REGISTER_CALLBACK:
        accepted = isinstance(store.register_callback(lease), Applied)
    elif trigger is Trigger.COMPLETE:
        accepted = finish(o.Complete())
    elif trigger is Trigger.RETRY:
        accepted = finish(o.RetryAfter(60))
    elif trigger is Trigger.FAIL:
        accepted = finish(o.Fail("boom", terminal=True))
    elif trigger is Trigger.SNOOZE:
        accepted = finish(o.Snooze(60))
    elif trigger is Trigger.CANCEL_BY_HANDLER:
        accepted = finish(o.Cancel("handler gave up"))
    elif trigger is Trigger.WAIT_FOR_CALLBACK:
        if before.state is JobState.RUNNING and not before.callback_id:
            cid = _applied(store.register_callback(lease)).callback_id or cid
            before = store.get_job(job.id)
        accepted = finish(o.WaitForCallback(CallbackToken(cid, lease, before.run_at)))
    elif trigger is Trigger.RESUME_CALLBACK:
        accepted = resolve(o.ResumeCallback({"resumed": True}))
    elif trigger is Trigger.COMPLETE_CALLBACK:
        accepted = resolve(o.CompleteCallback({"done": True}))
    elif trigger is Trigger.FAIL_CALLBACK:
        accepted = resolve(o.FailCallback("external failure"))
    elif trigger is Trigger.RETRY_CALLBACK:
        accepted = resolve(o.RetryCallback())
    elif trigger is Trigger.HEARTBEAT_CALLBACK:
        try:
            store.heartbeat_callback(cid, timeout_s=CALLBACK_TIMEOUT_S * 2)
            accepted = True
        except CallbackNotFound:
            accepted = False
    elif trigger in (Trigger.RELEASE_RETRY, Trigger.RELEASE_FAIL):
        accepted = isinstance(store.release([lease])[0], Applied)
    elif trigger in (Trigger.RESCUE_RETRY, Trigger.RESCUE_FAIL):
        clock.advance(max(STALENESS_S, CALLBACK_TIMEOUT_S) + 1)
        accepted = any(r.job.id == job.id for r in store.rescue(staleness_s=STALENESS_S))
    elif trigger is Trigger.CANCEL:
        accepted = operator(lambda: store.cancel(job.id))
    elif trigger is Trigger.OPERATOR_RETRY:
        accepted = operator(lambda: store.retry(job.id))
    elif trigger is Trigger.OPERATOR_RETRY_LATER:
        later = clock.now() + timedelta(hours=1)
        accepted = operator(lambda: store.retry(job.id, run_at=later))
    elif trigger is Trigger.MOVE_TO_DLQ:
        accepted = operator(lambda: store.move_to_dlq(job.id, reason="operator"))
    else:  # pragma: no cover - a new trigger needs a verb here
        raise NotImplementedError(f"no store verb fires {trigger}")
    return Fired(accepted, before, store.get_job(job.id), detail)


_CALLBACK_TRIGGERS = frozenset(
    {
        Trigger.RESUME_CALLBACK,
        Trigger.COMPLETE_CALLBACK,
        Trigger.FAIL_CALLBACK,
        Trigger.RETRY_CALLBACK,
        Trigger.HEARTBEAT_CALLBACK,
    }
)
