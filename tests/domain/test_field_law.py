"""Every decision leaves a job whose fields agree with its state (``awa.testing.laws``).

The stores' state machine and the simulator check the same law on real stores; here it is
checked on the pure decisions, from every state, for every trigger."""

from collections.abc import Callable
from datetime import timedelta

import attrs
from hypothesis import given
from hypothesis import strategies as st

from awa.domain import (
    TRANSITIONS,
    CallbackNotFound,
    Cancel,
    Complete,
    CompleteCallback,
    Decision,
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
    WaitForCallback,
    decisions,
)
from awa.domain.values import CallbackToken
from awa.testing.laws import field_disagreements
from awa.testing.strategies import NOW, jobs

LATER = NOW + timedelta(seconds=30)
_RNG = type("Half", (), {"random": lambda self: 0.5})()


def _decide(job: Job) -> dict[str, Callable[[], Job | Decision]]:
    """Every decision the domain can take about ``job``, by name."""
    token = CallbackToken(job.callback_id or "cb", job.lease, LATER)
    outcomes = {
        "complete": Complete(),
        "retry_after": RetryAfter(5),
        "snooze": Snooze(5),
        "cancel_by_handler": Cancel("stop"),
        "fail": Fail("ValueError: x"),
        "fail_terminal": Fail("TerminalError: x", terminal=True),
        "wait": WaitForCallback(token),
    }
    resolutions = {
        "resume": ResumeCallback({"r": 1}),
        "complete_callback": CompleteCallback({"c": 1}),
        "fail_callback": FailCallback("declined"),
        "retry_callback": RetryCallback(),
    }
    found: dict[str, Callable[[], Job | Decision]] = {
        "claim": lambda: decisions.claim(job, LATER, 60),
        "claim_no_deadline": lambda: decisions.claim(job, LATER, 0),
        "promote": lambda: decisions.promote(job, LATER),
        "heartbeat": lambda: decisions.heartbeat(job, LATER, {"p": 2}, {"m": 1}),
        "register_callback": lambda: decisions.register_callback(job, "cb2", 60, LATER),
        "heartbeat_callback": lambda: decisions.heartbeat_callback(job, "cb", 60, LATER),
        "release": lambda: decisions.release(job, LATER),
        "cancel": lambda: decisions.cancel(job, LATER),
        "operator_retry": lambda: decisions.operator_retry(job, LATER),
        "move_to_dlq": lambda: decisions.move_to_dlq(job, "operator", LATER).job,
    }
    for name, outcome in outcomes.items():
        found[name] = lambda o=outcome: decisions.finish(
            _with_callback(job), o, LATER, _RNG, {"p": 3}
        )
    for name, resolution in resolutions.items():
        found[name] = lambda r=resolution: decisions.resolve_callback(job, "cb", r, LATER)
    for cause in RescueCause:
        found[f"rescue_{cause.name}"] = lambda c=cause: decisions.rescue(job, c, LATER, _RNG)
    return found


def _with_callback(job: Job) -> Job:
    """A running job with a callback registered, so that a park can follow; others as is."""
    if job.state is JobState.RUNNING and job.callback_id is None:
        return decisions.register_callback(job, "cb", 60, NOW)
    return job


@given(jobs(), st.booleans())
def test_every_decision_leaves_fields_that_agree_with_the_state(
    job: Job, resumed_without_deadline: bool
) -> None:
    if resumed_without_deadline and job.state.is_live:
        job = attrs.evolve(job, deadline_at=None)
    assert field_disagreements(job) == [], "the strategy must draw lawful jobs"
    for name, decide in _decide(job).items():
        try:
            decided = decide()
        except (IllegalTransition, CallbackNotFound, ValueError):
            continue
        if isinstance(decided, Decision):  # it names the row of the table it followed
            assert TRANSITIONS[(job.state, decided.trigger)] is decided.job.state, name
            assert (decided.dlq_reason is not None) == (decided.job.state is JobState.FAILED)
            decided = decided.job
        assert field_disagreements(decided) == [], f"{name} from {job.state.value}"


def test_the_law_names_what_disagrees() -> None:
    running = decisions.claim(decisions.create_job(NewJob(kind="k"), job_id=7, now=NOW), NOW)
    job = decisions.cancel(running, LATER).job
    assert field_disagreements(job) == []
    kept = attrs.evolve(job, callback_id="cb", callback_timeout_at=LATER, finalized_at=None)
    assert field_disagreements(kept) == [
        "job 7 (cancelled): not live, yet keeps callback_id, callback_timeout_at",
        "job 7 (cancelled): finalized_at None",
    ]
