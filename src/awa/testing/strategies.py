"""Hypothesis strategies for domain values, for your own property tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import strategies as st

from awa.domain import (
    Cancel,
    Complete,
    ErrorEntry,
    Fail,
    Job,
    JobState,
    NewJob,
    Outcome,
    RetryAfter,
    Snooze,
)

__all__ = ["NOW", "jobs", "json_objects", "new_jobs", "outcomes", "reasons"]

NOW = datetime(2030, 1, 1, tzinfo=timezone.utc)

_names = st.from_regex(r"[a-z_][a-z0-9_]{0,20}", fullmatch=True)
_text = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=30)
#: a reason or error text a store accepts: storable and not blank
reasons = _text.filter(str.strip)
_json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | _text
    | st.floats(allow_nan=False, allow_infinity=False)
)


def json_objects(max_leaves: int = 10) -> st.SearchStrategy[dict[str, object]]:
    """JSON objects every store can hold (no NUL, finite floats)."""
    values = st.recursive(
        _json_leaf,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
        max_leaves=max_leaves,
    )
    return st.dictionaries(_text, values, max_size=4)


def new_jobs() -> st.SearchStrategy[NewJob]:
    return st.builds(
        NewJob,
        kind=_names,
        args=json_objects(),
        queue=_names,
        priority=st.integers(1, 4),
        max_attempts=st.integers(1, 1000),
        run_at=st.none() | st.integers(-3600, 3600).map(lambda s: NOW + timedelta(seconds=s)),
        tags=st.lists(
            st.text(
                st.characters(exclude_characters="\x00", exclude_categories=["Cs"]),
                min_size=1,
                max_size=10,
            ),
            max_size=3,
        ),
        metadata=json_objects(4),
    )


@st.composite
def jobs(draw: st.DrawFn, state: JobState | None = None) -> Job:
    """A job as a store could hold it, in ``state`` (any state when ``None``): its fields
    agree with its state (``awa.testing.laws.field_disagreements`` finds nothing)."""
    state = state if state is not None else draw(st.sampled_from(JobState))
    max_attempts = draw(st.integers(2 if state is JobState.RETRYABLE else 1, 30))
    live = state.is_live
    ended_an_attempt = state in (JobState.RETRYABLE, JobState.FAILED)
    pending = not live and not state.is_terminal
    last = max_attempts - 1 if pending else max_attempts  # a waiting job has an attempt left
    attempt = draw(st.integers(1 if live or ended_an_attempt else 0, last))
    claimed = attempt > 0 or draw(st.booleans())
    run_lease = draw(st.integers(max(attempt, 1), attempt + 50)) if claimed else 0
    started = NOW - timedelta(minutes=draw(st.integers(0, 30))) if claimed else None
    waiting = state is JobState.WAITING_EXTERNAL
    errors = (ErrorEntry("ValueError: drawn", attempt, NOW),) if ended_an_attempt else ()
    return Job(
        id=draw(st.integers(1, 2**40)),
        kind="k",
        queue="q",
        args={},
        state=state,
        priority=draw(st.integers(1, 4)),
        attempt=attempt,
        max_attempts=max_attempts,
        run_lease=run_lease,
        run_at=NOW,
        created_at=NOW - timedelta(hours=1),
        errors=errors,
        attempted_at=NOW if live else started,
        heartbeat_at=NOW if live else started,
        deadline_at=NOW + timedelta(minutes=5) if live else None,
        finalized_at=NOW if state.is_terminal else None,
        progress=None if state is JobState.COMPLETED else draw(st.none() | st.just({"p": 1})),
        callback_id="cb" if waiting else None,
        callback_timeout_at=NOW + timedelta(hours=1) if waiting else None,
        callback_result=draw(st.none() | st.just({"answer": 1})) if claimed else None,
    )


def outcomes() -> st.SearchStrategy[Outcome]:
    """Every handler outcome except ``WaitForCallback`` (which needs a registered token)."""
    seconds = st.floats(0, 86400, allow_nan=False)
    return st.one_of(
        st.just(Complete()),
        st.builds(RetryAfter, seconds),
        st.builds(Snooze, seconds),
        st.builds(Cancel, reasons),
        st.builds(Fail, reasons, st.booleans()),
    )
