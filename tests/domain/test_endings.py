"""Each way an attempt ends reads back as its row of the poison-job table."""

from datetime import datetime, timedelta, timezone

import pytest

from awa.domain import (
    AttemptEnd,
    DlqReason,
    ErrorEntry,
    Job,
    JobState,
    RescueCause,
    attempt_end,
    attempt_ends,
)
from awa.domain.endings import dlq_reason_after

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


def entry(error: str, *, terminal: bool = False, attempt: int = 1) -> ErrorEntry:
    return ErrorEntry(error, attempt, AT, terminal=terminal)


@pytest.mark.parametrize(
    ("error", "terminal", "end"),
    [
        ("ValueError: bad input", False, AttemptEnd.RAISED),
        ("retry requested after 5s", False, AttemptEnd.RETRY_REQUESTED),
        ("handler panicked: SystemExit: 3", False, AttemptEnd.PANICKED),
        (RescueCause.HEARTBEAT_STALE.error, False, AttemptEnd.HEARTBEAT_STALE),
        (RescueCause.DEADLINE_EXCEEDED.error, False, AttemptEnd.DEADLINE_EXCEEDED),
        (RescueCause.CALLBACK_TIMEOUT.error, False, AttemptEnd.CALLBACK_TIMEOUT),
        (RescueCause.WORKER_SHUTDOWN.error, False, AttemptEnd.WORKER_SHUTDOWN),
        ("UnknownJobKind: no handler", True, AttemptEnd.TERMINAL),
        ("handler panicked: but refused as terminal", True, AttemptEnd.TERMINAL),
    ],
)
def test_each_recorded_error_reads_as_its_row(error: str, terminal: bool, end: AttemptEnd) -> None:
    assert attempt_end(entry(error, terminal=terminal)) is end


def test_a_message_that_only_starts_like_a_rescue_cause_is_the_handlers_own() -> None:
    assert attempt_end(entry("heartbeat stale: worker presumed dead, said my handler")) is (
        AttemptEnd.RAISED
    )


def test_the_dead_letter_reason_follows_the_row() -> None:
    for cause in RescueCause:
        assert dlq_reason_after(entry(cause.error)) == cause.dlq_reason.value
    # raising, asking for a retry and dying all spend attempts alike
    for error in ("KeyError: 'to'", "retry requested after 5s", "handler panicked: SystemExit: 3"):
        assert dlq_reason_after(entry(error)) == DlqReason.MAX_ATTEMPTS_EXHAUSTED.value
    assert dlq_reason_after(entry("nope", terminal=True)) == DlqReason.TERMINAL_ERROR.value


def _job(state: JobState, errors: tuple[ErrorEntry, ...], finalized_at: datetime | None) -> Job:
    return Job(
        id=1, kind="k", queue="q", args={}, state=state, priority=2, attempt=len(errors),
        max_attempts=25, run_lease=len(errors), run_at=AT, created_at=AT, errors=errors,
        finalized_at=finalized_at,
    )  # fmt: skip


def test_a_handlers_cancel_is_the_last_entry_written_with_the_jobs_end() -> None:
    later = AT + timedelta(seconds=1)
    history = (entry("ValueError: x"), ErrorEntry("not needed any more", 2, later))
    by_handler = _job(JobState.CANCELLED, history, finalized_at=later)
    assert attempt_ends(by_handler) == [AttemptEnd.RAISED, AttemptEnd.CANCELLED]
    by_operator = _job(JobState.CANCELLED, history, finalized_at=later + timedelta(seconds=9))
    assert attempt_ends(by_operator) == [AttemptEnd.RAISED, AttemptEnd.RAISED]
    retrying = _job(JobState.RETRYABLE, history, finalized_at=None)
    assert attempt_ends(retrying) == [AttemptEnd.RAISED, AttemptEnd.RAISED]


def test_only_the_handlers_own_last_entry_of_a_cancelled_job_reads_as_its_cancel() -> None:
    t1, t2 = AT + timedelta(seconds=1), AT + timedelta(seconds=2)
    earlier = (entry("ValueError: x"), ErrorEntry("ValueError: y", 2, t1))
    history = (*earlier, ErrorEntry("not needed any more", 3, t2))
    raised = [AttemptEnd.RAISED] * 3
    assert attempt_ends(_job(JobState.CANCELLED, history, t2)) == [
        *raised[:2],
        AttemptEnd.CANCELLED,
    ]
    # the same moment as the job's end, but not a handler's cancel: a failure, a rescue's
    # entry, a terminal error (a frozen clock can put an operator's cancel at that moment)
    assert attempt_ends(_job(JobState.FAILED, history, t2)) == raised
    stale = (*earlier, ErrorEntry(RescueCause.HEARTBEAT_STALE.error, 3, t2))
    assert attempt_ends(_job(JobState.CANCELLED, stale, t2))[-1] is AttemptEnd.HEARTBEAT_STALE
    terminal = (*earlier, ErrorEntry("TerminalError: no", 3, t2, terminal=True))
    assert attempt_ends(_job(JobState.CANCELLED, terminal, t2))[-1] is AttemptEnd.TERMINAL
    assert attempt_ends(_job(JobState.CANCELLED, (), t2)) == []  # cancelled before any attempt


def test_every_row_reads_in_its_own_words() -> None:
    """Operators see these words (the UI's attempt history): every row has its own."""
    texts = [end.text for end in AttemptEnd]
    assert all(texts)
    assert len(set(texts)) == len(texts)
    assert AttemptEnd.RAISED.text == "handler raises an exception"
    assert AttemptEnd.CANCELLED.dlq_reason is None  # a cancel never dead-letters
