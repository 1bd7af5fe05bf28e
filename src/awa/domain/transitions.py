"""The lifecycle as data: ``(state, trigger) -> next state``.

This table is the only thing that decides whether a move is legal. A pair that is not a key is
an illegal move. Decision functions, both store adapters, the generated documentation
(``docs/lifecycle.md``) and the generated part of the contract suite all read it.

Row numbers in comments refer to the transition table of the lifecycle specification.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from awa.domain.errors import AwaError
from awa.domain.states import JobState

__all__ = [
    "INSERT_STATES",
    "TRANSITIONS",
    "IllegalTransition",
    "Trigger",
    "allowed_from",
    "next_state",
]


class Trigger(str, enum.Enum):
    """What happens to a job. Grouped by the actor that causes it."""

    # maintenance
    PROMOTE = "promote"
    RESCUE_RETRY = "rescue_retry"
    RESCUE_FAIL = "rescue_fail"
    # worker (every one of these is fenced by the attempt's run_lease)
    CLAIM = "claim"
    HEARTBEAT = "heartbeat"
    REGISTER_CALLBACK = "register_callback"
    COMPLETE = "complete"
    RETRY = "retry"
    FAIL = "fail"
    SNOOZE = "snooze"
    CANCEL_BY_HANDLER = "cancel_by_handler"
    WAIT_FOR_CALLBACK = "wait_for_callback"
    RELEASE_RETRY = "release_retry"
    RELEASE_FAIL = "release_fail"
    # the external system answering a callback
    RESUME_CALLBACK = "resume_callback"
    COMPLETE_CALLBACK = "complete_callback"
    FAIL_CALLBACK = "fail_callback"
    RETRY_CALLBACK = "retry_callback"
    HEARTBEAT_CALLBACK = "heartbeat_callback"
    # operator
    CANCEL = "cancel"
    OPERATOR_RETRY = "operator_retry"
    OPERATOR_RETRY_LATER = "operator_retry_later"
    MOVE_TO_DLQ = "move_to_dlq"

    def __str__(self) -> str:
        return self.value


S = JobState
T = Trigger

#: Row 1: an insert creates the job in one of these (``scheduled`` when ``run_at`` is ahead).
INSERT_STATES = (S.AVAILABLE, S.SCHEDULED)

TRANSITIONS: Mapping[tuple[JobState, Trigger], JobState] = MappingProxyType(
    {
        # row 2: due scheduled and retryable jobs become runnable (claim also reads them directly)
        (S.SCHEDULED, T.PROMOTE): S.AVAILABLE,
        (S.RETRYABLE, T.PROMOTE): S.AVAILABLE,
        # row 3
        (S.AVAILABLE, T.CLAIM): S.RUNNING,
        # guarded writes that keep the state: the attempt proves it is still the owner
        (S.RUNNING, T.HEARTBEAT): S.RUNNING,
        (S.WAITING_EXTERNAL, T.HEARTBEAT): S.WAITING_EXTERNAL,
        (S.RUNNING, T.REGISTER_CALLBACK): S.RUNNING,
        # rows 4-10: the handler's outcome
        (S.RUNNING, T.COMPLETE): S.COMPLETED,
        (S.RUNNING, T.RETRY): S.RETRYABLE,
        (S.RUNNING, T.FAIL): S.FAILED,
        (S.RUNNING, T.SNOOZE): S.SCHEDULED,
        (S.RUNNING, T.CANCEL_BY_HANDLER): S.CANCELLED,
        (S.RUNNING, T.WAIT_FOR_CALLBACK): S.WAITING_EXTERNAL,
        # rows 11-13: callback resolutions; complete, fail and resume also accept a job still
        # running whose callback is registered (the external system answered before the park)
        (S.WAITING_EXTERNAL, T.RESUME_CALLBACK): S.RUNNING,
        (S.RUNNING, T.RESUME_CALLBACK): S.RUNNING,
        (S.WAITING_EXTERNAL, T.COMPLETE_CALLBACK): S.COMPLETED,
        (S.RUNNING, T.COMPLETE_CALLBACK): S.COMPLETED,
        (S.WAITING_EXTERNAL, T.FAIL_CALLBACK): S.FAILED,
        (S.RUNNING, T.FAIL_CALLBACK): S.FAILED,
        (S.WAITING_EXTERNAL, T.RETRY_CALLBACK): S.AVAILABLE,
        (S.WAITING_EXTERNAL, T.HEARTBEAT_CALLBACK): S.WAITING_EXTERNAL,
        (S.RUNNING, T.HEARTBEAT_CALLBACK): S.RUNNING,
        # rows 14-16: maintenance ends an attempt that stopped heartbeating, outlived its
        # deadline, or whose callback timed out; retry while attempts remain, else fail
        (S.RUNNING, T.RESCUE_RETRY): S.RETRYABLE,
        (S.WAITING_EXTERNAL, T.RESCUE_RETRY): S.RETRYABLE,
        (S.RUNNING, T.RESCUE_FAIL): S.FAILED,
        (S.WAITING_EXTERNAL, T.RESCUE_FAIL): S.FAILED,
        # row 22: a worker shutting down releases an attempt whose handler is still running;
        # like a rescue it spends the attempt, but it is retried at once
        (S.RUNNING, T.RELEASE_RETRY): S.RETRYABLE,
        (S.RUNNING, T.RELEASE_FAIL): S.FAILED,
        # row 17: operator cancel of anything not terminal
        (S.SCHEDULED, T.CANCEL): S.CANCELLED,
        (S.AVAILABLE, T.CANCEL): S.CANCELLED,
        (S.RUNNING, T.CANCEL): S.CANCELLED,
        (S.WAITING_EXTERNAL, T.CANCEL): S.CANCELLED,
        (S.RETRYABLE, T.CANCEL): S.CANCELLED,
        # rows 18 and 20: operator retry, also from the dead-letter queue; at a run_at still
        # ahead, the job waits for it
        (S.FAILED, T.OPERATOR_RETRY): S.AVAILABLE,
        (S.CANCELLED, T.OPERATOR_RETRY): S.AVAILABLE,
        (S.FAILED, T.OPERATOR_RETRY_LATER): S.SCHEDULED,
        (S.CANCELLED, T.OPERATOR_RETRY_LATER): S.SCHEDULED,
        # row 19: only failed jobs enter the dead-letter queue (a home, not a state)
        (S.FAILED, T.MOVE_TO_DLQ): S.FAILED,
    }
)

del S, T


class IllegalTransition(AwaError):
    """The lifecycle table has no move for this trigger from the job's current state."""

    def __init__(
        self,
        state: JobState,
        trigger: Trigger,
        allowed: tuple[JobState, ...],
        job_id: int | None = None,
    ) -> None:
        who = f"job {job_id} is" if job_id is not None else "the job is"
        needs = ", ".join(s.value for s in allowed) or "nothing"
        super().__init__(f"{who} {state.value}; {trigger.value} needs one of: {needs}")
        self.state = state
        self.trigger = trigger
        self.allowed = allowed
        self.job_id = job_id


def next_state(state: JobState, trigger: Trigger) -> JobState:
    """The state ``trigger`` moves a job in ``state`` to; ``IllegalTransition`` if none."""
    try:
        return TRANSITIONS[(state, trigger)]
    except KeyError:
        raise IllegalTransition(state, trigger, allowed_from(trigger)) from None


def allowed_from(trigger: Trigger) -> tuple[JobState, ...]:
    """The states from which ``trigger`` is legal, in declaration order."""
    return tuple(state for state in JobState if (state, trigger) in TRANSITIONS)
