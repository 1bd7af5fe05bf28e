"""What a handler (or the external system behind a callback) says about an attempt."""

from __future__ import annotations

from typing import Any

import attrs

from awa.domain import validation as v
from awa.domain.defaults import FAILED_BY_CALLBACK
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


def _cancel_reason(value: str) -> str:
    return v.check_text("Cancel reason", value)


def _fail_error(value: str) -> str:
    return v.check_text("error", value)


def _traceback(value: str | None) -> str | None:
    return None if value is None else v.check_text("traceback", value)


def _callback_error(value: str) -> str:
    return v.check_text("callback error", value)


def _payload(value: Any) -> Any:
    return v.check_json("callback payload", value)


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

    reason: str = attrs.field(default="cancelled by handler", converter=_cancel_reason)


@attrs.frozen
class WaitForCallback:
    """Park the attempt until the external system answers the registered callback."""

    token: CallbackToken


@attrs.frozen
class Fail:
    """The attempt failed: retried with backoff while attempts remain, unless ``terminal``."""

    error: str = attrs.field(converter=_fail_error)
    terminal: bool = False
    traceback: str | None = attrs.field(default=None, converter=_traceback)


Outcome = Complete | RetryAfter | Snooze | Cancel | WaitForCallback | Fail


@attrs.frozen
class ResumeCallback:
    """Hand ``payload`` to the still-live handler and return the job to ``running``."""

    payload: Any = attrs.field(default=None, converter=_payload)


@attrs.frozen
class CompleteCallback:
    payload: Any = attrs.field(default=None, converter=_payload)


@attrs.frozen
class FailCallback:
    error: str = attrs.field(default=FAILED_BY_CALLBACK, converter=_callback_error)


@attrs.frozen
class RetryCallback:
    """Start the job again from scratch, with a fresh attempt budget."""


Resolution = ResumeCallback | CompleteCallback | FailCallback | RetryCallback
