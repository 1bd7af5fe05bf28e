"""What a handler (or the external system behind a callback) says about an attempt."""

from __future__ import annotations

from typing import Any

import attrs

from awa.domain import validation as v
from awa.domain.values import CallbackToken

__all__ = [
    "Cancel",
    "Complete",
    "CompleteCallback",
    "Fail",
    "FailCallback",
    "Outcome",
    "Resolution",
    "ResumeCallback",
    "RetryAfter",
    "RetryCallback",
    "Snooze",
    "WaitForCallback",
]


def _retry_after_s(value: float) -> float:
    return v.check_seconds("RetryAfter seconds", value)


def _snooze_s(value: float) -> float:
    return v.check_seconds("Snooze seconds", value)


@attrs.frozen
class Complete:
    """The handler returned normally (``None``)."""


@attrs.frozen
class RetryAfter:
    """Retry after ``seconds`` if attempts remain; this attempt still counts."""

    seconds: float = attrs.field(converter=_retry_after_s)


@attrs.frozen
class Snooze:
    """Run the same attempt again after ``seconds``; never spends an attempt."""

    seconds: float = attrs.field(converter=_snooze_s)


@attrs.frozen
class Cancel:
    """The handler decided the job should not run again."""

    reason: str = "cancelled by handler"


@attrs.frozen
class WaitForCallback:
    """Park the attempt until the external system answers the registered callback."""

    token: CallbackToken


@attrs.frozen
class Fail:
    """The attempt failed: retried with backoff while attempts remain, unless ``terminal``."""

    error: str
    terminal: bool = False
    traceback: str | None = None


Outcome = Complete | RetryAfter | Snooze | Cancel | WaitForCallback | Fail


@attrs.frozen
class ResumeCallback:
    """Hand ``payload`` to the still-live handler and return the job to ``running``."""

    payload: Any = None


@attrs.frozen
class CompleteCallback:
    payload: Any = None


@attrs.frozen
class FailCallback:
    error: str = "failed by callback"


@attrs.frozen
class RetryCallback:
    """Start the job again from scratch, with a fresh attempt budget."""


Resolution = ResumeCallback | CompleteCallback | FailCallback | RetryCallback
