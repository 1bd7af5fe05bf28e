"""The one-line diagnosis ``awa job dump`` prints: pure, on job values."""

from __future__ import annotations

from datetime import datetime, timezone

import attrs
import pytest

from awa.domain import ErrorEntry, Job, JobState, RescueCause
from awa.operations.diagnosis import diagnose, error_rounds

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


def job_with(*errors: tuple[int, str], state: JobState = JobState.RETRYABLE) -> Job:
    attempt = errors[-1][0] if errors else 0
    return Job(
        id=1, kind="k", queue="q", args={}, state=state, priority=2, attempt=attempt,
        max_attempts=25, run_lease=len(errors), run_at=AT, created_at=AT,
        errors=tuple(ErrorEntry(message, attempt, AT) for attempt, message in errors),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("message", "process"),
    [
        ("heartbeat stale: worker presumed dead", True),
        ("hard deadline exceeded", True),
        ("handler panicked: SystemExit", True),
        ("callback timed out", False),
        ("ValueError: bad input", False),
    ],
)
def test_a_repeating_message_is_named_with_where_to_look(message: str, process: bool) -> None:
    diagnosis = diagnose(job_with((1, "other"), (2, message), (3, message)))
    assert diagnosis is not None
    assert (diagnosis.message, diagnosis.attempts) == (message, 2)
    assert diagnosis.points_at_process is process
    assert str(diagnosis).startswith(f'2 attempts in a row ended with "{message}"')


@pytest.mark.parametrize("cause", list(RescueCause))
def test_every_rescue_cause_repeating_says_where_to_look(cause: RescueCause) -> None:
    diagnosis = diagnose(job_with((1, cause.error), (2, cause.error)))
    assert diagnosis is not None
    assert "handler fails the same way" not in diagnosis.hint


def test_only_the_first_line_counts_so_tracebacks_do_not_hide_a_repeat() -> None:
    diagnosis = diagnose(job_with((1, "KeyError: 'to'\n  line 3"), (2, "KeyError: 'to'\n  line 9")))
    assert diagnosis is not None
    assert diagnosis.message == "KeyError: 'to'"


@pytest.mark.parametrize(
    "errors",
    [
        (),
        ((1, "heartbeat stale: worker presumed dead"),),
        ((1, "a"), (2, "b")),
        ((1, "a"), (2, "a"), (3, "b")),
    ],
)
def test_no_repeat_at_the_end_means_no_diagnosis(errors: tuple[tuple[int, str], ...]) -> None:
    assert diagnose(job_with(*errors)) is None


def test_a_job_that_completed_since_needs_no_diagnosis() -> None:
    stale = "heartbeat stale: worker presumed dead"
    job = job_with((1, stale), (2, stale), (3, stale))
    assert diagnose(job) is not None
    assert diagnose(attrs.evolve(job, state=JobState.COMPLETED)) is None


def test_a_retry_that_resets_the_attempt_starts_a_new_round() -> None:
    job = job_with((1, "a"), (2, "a"), (3, "a"), (1, "a"), (2, "b"), (1, "c"))
    assert error_rounds(job.errors) == [1, 1, 1, 2, 2, 3]
