"""The operator verbs' refusals in operator words: what was asked, why it cannot be, and what
would do instead. Each answers 409 on the dashboard and one error line in the CLI."""

from __future__ import annotations

from awa.domain import AwaError, IllegalTransition

__all__ = ["JobNotInDlq", "NotCancellable"]


class JobNotInDlq(AwaError):
    """A dead-letter retry of a job that exists but is not dead-lettered."""


class NotCancellable(AwaError):
    """A cancel of a terminal job: the store's ``IllegalTransition`` in operator words."""

    def __init__(self, job_id: int, refusal: IllegalTransition) -> None:
        allowed = ", ".join(s.value for s in refusal.allowed)
        super().__init__(
            f"job {job_id} is {refusal.state.value}: not cancellable (only {allowed} jobs are);"
            " nothing changed"
        )
