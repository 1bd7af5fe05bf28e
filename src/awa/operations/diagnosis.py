"""A one-line reading of a job's error history: does one message repeat across attempts?

Pure: it looks at the job value only. ``awa job dump`` prints the result under the history;
the dashboard shows it on the job page.
"""

from __future__ import annotations

import attrs

from awa.domain import AttemptEnd, ErrorEntry, Job, JobState, attempt_end

__all__ = ["REPEAT_MIN", "Diagnosis", "diagnose", "error_rounds"]

#: how many attempts in a row must end with one message before it counts as a pattern
REPEAT_MIN = 2

# what a run of attempts that ended the same way says, for the ways the lifecycle records
# itself (``awa.domain.endings``): whether it points at the process, and where to look
_END_HINTS = {
    AttemptEnd.HEARTBEAT_STALE: (
        True,
        "the worker process died while running this job every time (crash, OOM kill, SIGKILL,"
        " eviction, a native extension): look at the process, not the handler's error path",
    ),
    AttemptEnd.DEADLINE_EXCEEDED: (
        True,
        "the attempt hung past the queue's deadline_duration every time: look at what the process"
        " blocks on (I/O without a timeout, a lock, a busy loop), not the handler's error path",
    ),
    AttemptEnd.CALLBACK_TIMEOUT: (
        False,
        "the external system never answered the callback: look at the system that should call"
        " back, not the handler",
    ),
    AttemptEnd.WORKER_SHUTDOWN: (
        True,
        "every attempt outlived its worker's shutdown timeout: the handler takes longer than"
        " deploys allow (raise --shutdown-timeout and the orchestrator's grace period, or make"
        " the handler resumable), or it hangs",
    ),
    AttemptEnd.PANICKED: (
        True,
        "the handler escaped with a BaseException every time: look at what it calls that"
        " exits or interrupts, not at ordinary exceptions",
    ),
}


@attrs.frozen
class Diagnosis:
    """``message`` ended the last ``attempts`` attempts in a row; ``hint`` says where to look."""

    message: str
    attempts: int
    points_at_process: bool
    hint: str

    def __str__(self) -> str:
        return f'{self.attempts} attempts in a row ended with "{self.message}": {self.hint}'


def _headline(entry: ErrorEntry) -> str:
    """The first line of an error: a traceback or a varying tail must not hide a repeat."""
    return entry.error.strip().splitlines()[0] if entry.error.strip() else ""


def diagnose(job: Job) -> Diagnosis | None:
    """The message that ended the most recent attempts in a row, if it did so at least
    ``REPEAT_MIN`` times; ``None`` when the history shows no repeating failure, or when the
    job completed since (the history stays on the job, but nothing needs looking at)."""
    if not job.errors or job.state is JobState.COMPLETED:
        return None
    last = _headline(job.errors[-1])
    streak = 0
    for entry in reversed(job.errors):
        if _headline(entry) != last:
            break
        streak += 1
    if streak < REPEAT_MIN or not last:
        return None
    end = attempt_end(job.errors[-1])
    if end in _END_HINTS:
        points_at_process, hint = _END_HINTS[end]
        return Diagnosis(last, streak, points_at_process, hint)
    hint = (
        "the handler fails the same way on every attempt: a poison input? raise"
        " awa.TerminalError for input that can never succeed"
    )
    if any(entry.terminal for entry in job.errors[-streak:]):
        hint = "the handler refused this input as terminal; fix the input or the handler"
    return Diagnosis(last, streak, False, hint)


def error_rounds(errors: tuple[ErrorEntry, ...]) -> list[int]:
    """Which round of attempts each error belongs to: an operator or dead-letter retry resets
    the attempt count, so an attempt number that does not go up starts a new round."""
    rounds: list[int] = []
    current, previous = 1, 0
    for entry in errors:
        if entry.attempt <= previous and rounds:
            current += 1
        rounds.append(current)
        previous = entry.attempt
    return rounds
