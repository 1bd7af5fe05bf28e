"""Plant each classic job-queue bug and watch the simulation catch it.

Each test patches one bug into the real code, runs seeds until the simulation reports a
violation, and fails if none does within the budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

from awa.adapters.memory import MemoryStore
from awa.domain import Decision, JobState, Snooze, decisions
from awa.ports import Finish
from awa.testing.simulation import Simulation

SEEDS_MAX = 20


def _first_violation(jobs: int = 300) -> tuple[int, str]:
    for seed in range(SEEDS_MAX):
        report = Simulation(seed, jobs=jobs, workers=5).run()
        if report.violations:
            return seed, report.violations[0]
    raise AssertionError(f"the planted bug survived {SEEDS_MAX} seeds of {jobs} jobs")


@pytest.fixture
def unfenced_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    original = MemoryStore.finish

    def finish(self: MemoryStore, finishes: list[Finish]) -> Any:
        # the bug: write through whatever attempt holds the job now, not the caller's
        current = [
            attrs.evolve(f, lease=self._table.jobs[f.lease.job_id].lease)
            if f.lease.job_id in self._table.jobs
            else f
            for f in finishes
        ]
        return original(self, current)

    monkeypatch.setattr(MemoryStore, "finish", finish)


def test_a_finish_not_fenced_by_run_lease_is_caught(unfenced_finish: None) -> None:
    _, violation = _first_violation()
    assert "stale finish accepted" in violation


def _patch(monkeypatch: pytest.MonkeyPatch, name: str, wrap: Callable[..., Any]) -> None:
    original = getattr(decisions, name)
    monkeypatch.setattr(decisions, name, lambda *a, **k: wrap(original, *a, **k))


def test_a_rescue_that_ignores_max_attempts_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def rescue(original: Callable[..., Decision], job: Any, *args: Any) -> Decision:
        # the bug: a rescue always retries, however many attempts were spent
        decision = original(attrs.evolve(job, max_attempts=job.attempt + 1), *args)
        return attrs.evolve(decision, job=attrs.evolve(decision.job, max_attempts=job.max_attempts))

    _patch(monkeypatch, "rescue", rescue)
    _, violation = _first_violation()
    assert "> max_attempts" in violation or "attempt" in violation


def test_a_snooze_that_spends_an_attempt_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def finish(
        original: Callable[..., Decision], job: Any, outcome: Any, *args: Any, **kw: Any
    ) -> Decision:
        decision = original(job, outcome, *args, **kw)
        if isinstance(outcome, Snooze):  # the bug: the claim's attempt is kept
            return attrs.evolve(decision, job=attrs.evolve(decision.job, attempt=job.attempt))
        return decision

    _patch(monkeypatch, "finish", finish)
    _, violation = _first_violation()
    assert "snoozes since its budget was last reset" in violation


def test_a_cancel_that_a_late_finish_overwrites_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def finish(original: Callable[..., Decision], job: Any, *args: Any, **kw: Any) -> Decision:
        if job.state is JobState.CANCELLED:  # the bug: a late finish still lands
            job = attrs.evolve(job, state=JobState.RUNNING)
        return original(job, *args, **kw)

    _patch(monkeypatch, "finish", finish)
    _, violation = _first_violation()
    assert "stale finish accepted" in violation
    assert "cancelled" in violation
