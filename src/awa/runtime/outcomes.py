"""Turn what a handler returned or raised into a domain outcome."""

from __future__ import annotations

import traceback as tb

from awa.domain import (
    Cancel,
    Complete,
    Fail,
    Outcome,
    RetryAfter,
    Snooze,
    TerminalError,
    WaitForCallback,
)

__all__ = ["outcome_from_exception", "outcome_from_return"]

_TRACEBACK_CHARS_MAX = 4000
_TRACEBACK_FRAMES = 8


def outcome_from_return(value: object) -> Outcome:
    """``None`` (or any plain value) completes the job; outcome values are taken as given."""
    if isinstance(value, (RetryAfter, Snooze, Cancel, WaitForCallback)):
        return value
    return Complete()


def _short_traceback(exc: BaseException) -> str:
    lines = tb.format_exception(type(exc), exc, exc.__traceback__, limit=-_TRACEBACK_FRAMES)
    text = "".join(lines)
    return text if len(text) <= _TRACEBACK_CHARS_MAX else "…" + text[-_TRACEBACK_CHARS_MAX:]


def _describe(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def outcome_from_exception(exc: BaseException) -> Fail:
    """``TerminalError`` fails at once; an ``Exception`` is retried; anything else escaping a
    handler (``SystemExit``, ``KeyboardInterrupt``, ...) is a panic, retried like an error."""
    trace = _short_traceback(exc)
    if isinstance(exc, TerminalError):
        return Fail(_describe(exc), terminal=True, traceback=trace)
    if isinstance(exc, Exception):
        return Fail(_describe(exc), traceback=trace)
    return Fail(f"handler panicked: {_describe(exc)}", traceback=trace)
