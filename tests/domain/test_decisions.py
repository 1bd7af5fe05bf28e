"""Properties of the pure decisions: they follow the table and keep the attempt rules."""

import random
from datetime import timedelta

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from awa.domain import (
    BACKOFF_MAX_S,
    TRANSITIONS,
    CallbackNotFound,
    Complete,
    CompleteCallback,
    DlqReason,
    ErrorEntry,
    Fail,
    FailCallback,
    IllegalTransition,
    Job,
    JobState,
    NewJob,
    RescueCause,
    ResumeCallback,
    RetryAfter,
    RetryCallback,
    Snooze,
    Trigger,
    ValidationError,
    WaitForCallback,
    backoff_s,
    decisions,
    rescue_cause,
)
from awa.domain.endings import dlq_reason_after
from awa.domain.values import CallbackToken
from awa.testing.strategies import NOW, jobs, new_jobs, outcomes, reasons

RNG = random.Random(0)


@given(jobs(), outcomes())
def test_finish_follows_the_table_and_never_touches_the_lease(job: Job, outcome: object) -> None:
    try:
        decision = decisions.finish(job, outcome, NOW, RNG)  # type: ignore[arg-type]
    except IllegalTransition:
        assert job.state is not JobState.RUNNING
        return
    assert TRANSITIONS[(job.state, decision.trigger)] is decision.job.state
    assert decision.job.run_lease == job.run_lease
    assert decision.job.id == job.id


@given(jobs(JobState.RUNNING), outcomes())
def test_only_snooze_changes_the_attempt_and_it_gives_it_back(job: Job, outcome: object) -> None:
    decision = decisions.finish(job, outcome, NOW, RNG)  # type: ignore[arg-type]
    if isinstance(outcome, Snooze):
        assert decision.job.attempt == job.attempt - 1
        assert decision.error is None
    else:
        assert decision.job.attempt == job.attempt


@given(jobs(JobState.RUNNING), reasons, st.booleans())
def test_an_error_retries_while_attempts_remain(job: Job, message: str, terminal: bool) -> None:
    decision = decisions.finish(job, Fail(message, terminal), NOW, RNG)
    assert decision.error is not None
    assert decision.error.error == message
    assert decision.error.attempt == job.attempt
    assert decision.job.errors[-1] == decision.error
    if terminal:
        assert decision.job.state is JobState.FAILED
        assert decision.dlq_reason == DlqReason.TERMINAL_ERROR.value
    elif job.attempt >= job.max_attempts:
        assert decision.job.state is JobState.FAILED
        assert decision.dlq_reason == DlqReason.MAX_ATTEMPTS_EXHAUSTED.value
    else:
        assert decision.job.state is JobState.RETRYABLE
        assert decision.dlq_reason is None
        assert NOW < decision.job.run_at <= NOW + timedelta(seconds=BACKOFF_MAX_S)


@given(jobs(JobState.RUNNING), st.sampled_from(list(RescueCause)))
def test_rescue_spends_the_attempt_with_the_cause_text(job: Job, cause: RescueCause) -> None:
    decision = decisions.rescue(job, cause, NOW, RNG)
    assert decision.job.attempt == job.attempt
    assert decision.job.errors[-1].error == cause.error
    assert decision.job.callback_id is None
    if job.attempt >= job.max_attempts:
        assert decision.trigger is Trigger.RESCUE_FAIL
        assert decision.dlq_reason == cause.dlq_reason.value
    else:
        assert decision.trigger is Trigger.RESCUE_RETRY


def test_rescue_causes_carry_the_exact_texts_and_reasons() -> None:
    assert [(c.error, c.dlq_reason.value) for c in RescueCause] == [
        ("heartbeat stale: worker presumed dead", "heartbeat_stale"),
        ("hard deadline exceeded", "deadline_exceeded"),
        ("callback timed out", "callback_timeout"),
        ("worker shut down before the attempt finished", "worker_shutdown"),
    ]


@given(jobs(JobState.RUNNING), st.integers(0, 400))
def test_rescue_cause_prefers_a_dead_worker_over_a_passed_deadline(job: Job, late_s: int) -> None:
    now = NOW + timedelta(seconds=late_s)
    cause = rescue_cause(job, now, staleness_s=90)
    if late_s > 90:
        assert cause is RescueCause.HEARTBEAT_STALE
    else:
        assert cause is None  # the deadline is 300 s away, the heartbeat is fresh


@given(st.integers(0, 2000), st.floats(0, 0.999999))
def test_backoff_is_two_to_the_attempt_plus_a_quarter_jitter_capped_at_a_day(
    attempt: int, jitter: float
) -> None:
    delay = backoff_s(attempt, _Fixed(jitter))
    base = 2.0 ** min(attempt, 30)
    assert delay == min(base * (1 + 0.25 * jitter), BACKOFF_MAX_S)


class _Fixed:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


@given(new_jobs())
def test_created_job_is_scheduled_only_for_the_future(new: object) -> None:
    job = decisions.create_job(new, job_id=1, now=NOW)  # type: ignore[arg-type]
    assert (job.attempt, job.run_lease) == (0, 0)
    expected = JobState.SCHEDULED if job.run_at > NOW else JobState.AVAILABLE
    assert job.state is expected


@given(jobs(JobState.AVAILABLE), st.floats(0, 3600, allow_nan=False))
def test_claim_takes_a_new_attempt_and_a_new_lease(job: Job, deadline_s: float) -> None:
    claimed = decisions.claim(job, NOW, deadline_s)
    assert claimed.attempt == job.attempt + 1
    assert claimed.run_lease == job.run_lease + 1
    assert claimed.heartbeat_at == NOW
    assert claimed.deadline_at == (NOW + timedelta(seconds=deadline_s) if deadline_s else None)


@given(jobs(JobState.SCHEDULED))
def test_claim_refuses_a_job_that_is_not_due(job: Job) -> None:
    job = attrs.evolve(job, run_at=NOW + timedelta(seconds=5))
    with pytest.raises(ValueError, match="not due"):
        decisions.claim(job, NOW)


@given(jobs())
def test_operator_retry_resets_attempts_and_keeps_the_lease(job: Job) -> None:
    try:
        retried = decisions.operator_retry(job, NOW)
    except IllegalTransition:
        assert job.state not in (JobState.FAILED, JobState.CANCELLED)
        return
    assert (retried.state, retried.attempt, retried.run_lease) == (
        JobState.AVAILABLE,
        0,
        job.run_lease,
    )


@given(jobs(JobState.RUNNING))
def test_complete_clears_progress_and_finalizes(job: Job) -> None:
    decision = decisions.finish(attrs.evolve(job, progress={"p": 1}), Complete(), NOW, RNG)
    assert decision.job.progress is None
    assert decision.job.finalized_at == NOW


@given(jobs(JobState.RUNNING))
def test_retry_after_on_the_last_attempt_fails(job: Job) -> None:
    job = attrs.evolve(job, attempt=3, max_attempts=3)
    decision = decisions.finish(job, RetryAfter(5), NOW, RNG)
    assert decision.job.state is JobState.FAILED
    assert decision.dlq_reason == "max_attempts_exhausted"


class _NoRandomness:
    """A random source that must not be used: a refused move draws no jitter."""

    def random(self) -> float:
        raise AssertionError("jitter drawn for a move the table refuses")


@given(jobs().filter(lambda job: job.state is not JobState.RUNNING), st.sampled_from([0, 1]))
def test_a_refused_failure_draws_no_jitter(job: Job, which: int) -> None:
    outcome = [Fail("ValueError: late"), RetryAfter(5)][which]
    with pytest.raises(IllegalTransition):
        decisions.finish(job, outcome, NOW, _NoRandomness())


@given(jobs().filter(lambda job: not job.state.is_live), st.sampled_from(list(RescueCause)))
def test_a_refused_rescue_draws_no_jitter(job: Job, cause: RescueCause) -> None:
    with pytest.raises(IllegalTransition):
        decisions.rescue(job, cause, NOW, _NoRandomness())


def test_backoff_is_capped_at_exactly_one_day() -> None:
    assert backoff_s(16, _Fixed(0.999)) == 65_536 * 1.24975  # just under the cap
    assert backoff_s(17, _Fixed(0.0)) == 86_400.0
    assert backoff_s(10_000, _Fixed(0.0)) == 86_400.0  # no overflow for absurd attempts
    assert backoff_s(-3, _Fixed(0.0)) == 1.0


def test_a_dead_letter_needs_a_reason() -> None:
    failed = decisions.finish(_one_running(), Fail("x", terminal=True), NOW, RNG).job
    assert decisions.move_to_dlq(failed, "operator", NOW).reason == "operator"
    with pytest.raises(ValueError, match="a dead-letter reason is required"):
        decisions.move_to_dlq(failed, "", NOW)


def test_the_dead_letter_reason_follows_the_last_error() -> None:
    def last(error: str, terminal: bool = False) -> ErrorEntry:
        return ErrorEntry(error, 1, NOW, terminal=terminal)

    for cause in RescueCause:
        assert dlq_reason_after(last(cause.error)) == cause.dlq_reason.value
    assert dlq_reason_after(last("TerminalError: x", terminal=True)) == "terminal_error"
    assert dlq_reason_after(last("ValueError: x")) == "max_attempts_exhausted"


def _one_running() -> Job:
    new = decisions.create_job(NewJob(kind="k"), job_id=1, now=NOW)
    return decisions.claim(new, NOW)


def test_claim_refuses_a_deadline_no_store_can_hold() -> None:
    available = decisions.create_job(NewJob(kind="k"), job_id=1, now=NOW)
    for bad in (-1, float("nan"), 1e12):
        with pytest.raises(ValidationError, match="deadline_duration must be"):
            decisions.claim(available, NOW, bad)


def test_callback_decisions_refuse_a_timeout_that_is_not_positive() -> None:
    running = _one_running()
    registered = decisions.register_callback(running, "cb", 60, NOW)
    for bad in (0, -5, float("inf")):
        with pytest.raises(ValidationError, match="callback timeout must be > 0"):
            decisions.register_callback(running, "cb", bad, NOW)
        with pytest.raises(ValidationError, match="callback timeout must be > 0"):
            decisions.heartbeat_callback(registered, "cb", bad, NOW)


@given(jobs().filter(lambda job: job.state is not JobState.RUNNING))
def test_only_a_running_attempt_is_released(job: Job) -> None:
    with pytest.raises(IllegalTransition):
        decisions.release(job, NOW)


@given(jobs(), st.integers(-5, 5))
def test_claimable_means_available_or_waiting_and_due(job: Job, due_in_s: int) -> None:
    job = attrs.evolve(job, run_at=NOW + timedelta(seconds=due_in_s))
    waiting = job.state in (JobState.SCHEDULED, JobState.RETRYABLE)
    expected = job.state is JobState.AVAILABLE or (waiting and due_in_s <= 0)
    assert decisions.is_claimable(job, NOW) is expected


@given(jobs().filter(lambda job: job.state is not JobState.RUNNING))
def test_a_park_for_an_attempt_that_is_not_running_is_illegal(job: Job) -> None:
    token = CallbackToken("another", job.lease, NOW)
    with pytest.raises(IllegalTransition):
        decisions.finish(job, WaitForCallback(token), NOW, RNG)


@given(jobs(JobState.WAITING_EXTERNAL), st.sampled_from(["resume", "complete", "fail", "retry"]))
def test_only_the_pending_callback_id_answers(job: Job, kind: str) -> None:
    resolution = {
        "resume": ResumeCallback(),
        "complete": CompleteCallback(),
        "fail": FailCallback("x"),
        "retry": RetryCallback(),
    }[kind]
    with pytest.raises(CallbackNotFound):
        decisions.resolve_callback(job, "not-" + (job.callback_id or ""), resolution, NOW)
    with pytest.raises(CallbackNotFound):
        decisions.heartbeat_callback(job, "not-" + (job.callback_id or ""), 60, NOW)
