"""The transition table is the lifecycle specification's table, as data."""

import pytest

from awa.domain import (
    INSERT_STATES,
    LIVE_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    IllegalTransition,
    JobState,
    Trigger,
    next_state,
)

S, T = JobState, Trigger

# One line per row of the specification's transition table (rows 2-20).
SPEC_ROWS = {
    2: [(S.SCHEDULED, T.PROMOTE, S.AVAILABLE), (S.RETRYABLE, T.PROMOTE, S.AVAILABLE)],
    3: [(S.AVAILABLE, T.CLAIM, S.RUNNING)],
    4: [(S.RUNNING, T.COMPLETE, S.COMPLETED)],
    5: [(S.RUNNING, T.RETRY, S.RETRYABLE)],
    6: [(S.RUNNING, T.FAIL, S.FAILED)],
    8: [(S.RUNNING, T.SNOOZE, S.SCHEDULED)],
    9: [(S.RUNNING, T.CANCEL_BY_HANDLER, S.CANCELLED)],
    10: [(S.RUNNING, T.WAIT_FOR_CALLBACK, S.WAITING_EXTERNAL)],
    11: [(S.WAITING_EXTERNAL, T.RESUME_CALLBACK, S.RUNNING)],
    12: [
        (S.WAITING_EXTERNAL, T.COMPLETE_CALLBACK, S.COMPLETED),
        (S.WAITING_EXTERNAL, T.FAIL_CALLBACK, S.FAILED),
    ],
    13: [(S.WAITING_EXTERNAL, T.RETRY_CALLBACK, S.AVAILABLE)],
    14: [
        (S.WAITING_EXTERNAL, T.RESCUE_RETRY, S.RETRYABLE),
        (S.WAITING_EXTERNAL, T.RESCUE_FAIL, S.FAILED),
    ],
    15: [(S.RUNNING, T.RESCUE_RETRY, S.RETRYABLE), (S.RUNNING, T.RESCUE_FAIL, S.FAILED)],
    17: [
        (state, T.CANCEL, S.CANCELLED)
        for state in (S.SCHEDULED, S.AVAILABLE, S.RUNNING, S.WAITING_EXTERNAL, S.RETRYABLE)
    ],
    18: [(S.FAILED, T.OPERATOR_RETRY, S.AVAILABLE), (S.CANCELLED, T.OPERATOR_RETRY, S.AVAILABLE)],
    19: [(S.FAILED, T.MOVE_TO_DLQ, S.FAILED)],
    # row 20 (DLQ -> available / scheduled): "scheduled" when the redrive gives a later run_at
    20: [
        (S.FAILED, T.OPERATOR_RETRY, S.AVAILABLE),
        (S.FAILED, T.OPERATOR_RETRY_LATER, S.SCHEDULED),
        (S.CANCELLED, T.OPERATOR_RETRY_LATER, S.SCHEDULED),
    ],
}


@pytest.mark.parametrize("row", sorted(SPEC_ROWS))
def test_table_holds_every_row_of_the_specification(row: int) -> None:
    for state, trigger, target in SPEC_ROWS[row]:
        assert TRANSITIONS[(state, trigger)] is target


def test_insert_creates_available_or_scheduled_jobs() -> None:
    assert set(INSERT_STATES) == {S.AVAILABLE, S.SCHEDULED}


def test_every_state_is_reachable_from_insert() -> None:
    seen = set(INSERT_STATES)
    frontier = list(INSERT_STATES)
    while frontier:
        state = frontier.pop()
        for (source, _), target in TRANSITIONS.items():
            if source is state and target not in seen:
                seen.add(target)
                frontier.append(target)
    assert seen == set(JobState)


def test_terminal_states_move_only_by_operator() -> None:
    for (state, trigger), _ in TRANSITIONS.items():
        if state in TERMINAL_STATES:
            assert trigger in {T.OPERATOR_RETRY, T.OPERATOR_RETRY_LATER, T.MOVE_TO_DLQ}


def test_completed_jobs_never_move() -> None:
    assert not [key for key in TRANSITIONS if key[0] is S.COMPLETED]


def test_only_live_states_accept_lease_fenced_worker_writes() -> None:
    worker_triggers = {
        T.HEARTBEAT,
        T.REGISTER_CALLBACK,
        T.COMPLETE,
        T.RETRY,
        T.FAIL,
        T.SNOOZE,
        T.CANCEL_BY_HANDLER,
        T.WAIT_FOR_CALLBACK,
        T.RESCUE_RETRY,
        T.RESCUE_FAIL,
    }
    for state, trigger in TRANSITIONS:
        if trigger in worker_triggers:
            assert state in LIVE_STATES, (state, trigger)


def test_retry_external_needs_a_parked_job() -> None:
    assert [s for (s, t) in TRANSITIONS if t is T.RETRY_CALLBACK] == [S.WAITING_EXTERNAL]


def test_missing_pair_is_an_illegal_transition_with_a_clear_message() -> None:
    with pytest.raises(IllegalTransition) as caught:
        next_state(S.COMPLETED, T.CANCEL)
    assert str(caught.value) == (
        "the job is completed; cancel needs one of: "
        "scheduled, available, running, waiting_external, retryable"
    )
    assert caught.value.state is S.COMPLETED


def test_every_trigger_is_used_by_the_table() -> None:
    assert {t for (_, t) in TRANSITIONS} == set(Trigger)
