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
from awa.domain.defaults import HANDLER_PANICKED
from awa.domain.validation import storable_text

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
    if len(text) > _TRACEBACK_CHARS_MAX:
        text = "…" + text[-_TRACEBACK_CHARS_MAX:]
    return storable_text(text)


def _describe(exc: BaseException) -> str:
    """``ExcType: message``, made storable: the message is whatever the handler's code put in
    it (a NUL from a binary record, a lone surrogate from a file name), and it is this attempt's
    own record, so it is kept visibly escaped rather than refused."""
    try:
        message = str(exc)
    except Exception as str_failed:  # an exception whose __str__ itself raises
        message = f"<str() failed: {type(str_failed).__name__}>"
    name = type(exc).__name__
    return storable_text(f"{name}: {message}" if message.strip() else name)


def outcome_from_exception(exc: BaseException) -> Fail:
    """``TerminalError`` fails at once; an ``Exception`` is retried; anything else escaping a
    handler (``SystemExit``, ``KeyboardInterrupt``, ...) is a panic, retried like an error."""
    trace = _short_traceback(exc)
    if isinstance(exc, TerminalError):
        return Fail(_describe(exc), terminal=True, traceback=trace)
    if isinstance(exc, Exception):
        return Fail(_describe(exc), traceback=trace)
    return Fail(f"{HANDLER_PANICKED}: {_describe(exc)}", traceback=trace)
