"""The retention table (``awa.domain.retention``): every terminal state has exactly one
retention, and failed jobs are kept longer than completed ones by default."""

from __future__ import annotations

from awa.domain import TERMINAL_STATES, JobState
from awa.domain.retention import (
    FAILED_RETENTION_S,
    FINISHED_RETENTION_S,
    RETENTION_OF,
    Retention,
    retained_states,
)
from awa.ports import QueueSettings


def test_every_terminal_state_has_one_retention_and_no_other_state_has_any() -> None:
    assert set(RETENTION_OF) == TERMINAL_STATES
    assert retained_states(Retention.COMPLETED) == (JobState.COMPLETED,)
    assert retained_states(Retention.FAILED) == (JobState.FAILED, JobState.CANCELLED)


def test_each_retention_names_a_queue_setting() -> None:
    assert {retention.value for retention in Retention} <= set(QueueSettings.__annotations__)


def test_failed_jobs_are_kept_a_week_by_default_and_longer_than_completed_ones() -> None:
    assert FAILED_RETENTION_S == 7 * 86_400 > FINISHED_RETENTION_S
