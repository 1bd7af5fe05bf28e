"""Every default and range of the lifecycle, in one place (the specification's "Timings and
defaults"): the domain, the ports, the stores, the runtime and the clients read them here."""

from __future__ import annotations

__all__ = [
    "CALLBACK_TIMEOUT_S",
    "DEADLINE_S",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_PRIORITY",
    "FAILED_BY_CALLBACK",
    "HANDLER_PANICKED",
    "HEARTBEAT_INTERVAL_S",
    "MAX_ATTEMPTS_RANGE",
    "PRIORITY_RANGE",
    "RETRY_REQUESTED",
    "STALENESS_S",
    "UNREADABLE_JOB",
]

#: claim order is ``(priority, run_at, id)``: lower runs first
PRIORITY_RANGE = range(1, 5)
DEFAULT_PRIORITY = 2
MAX_ATTEMPTS_RANGE = range(1, 1001)
DEFAULT_MAX_ATTEMPTS = 25
#: how long an attempt may run (per queue; 0 disables)
DEADLINE_S = 300.0
#: how often a worker proves its attempts are alive
HEARTBEAT_INTERVAL_S = 30.0
#: how old the last heartbeat may be before the attempt is presumed dead
STALENESS_S = 90.0
#: how long a registered callback waits for the external side (a callback heartbeat extends it)
CALLBACK_TIMEOUT_S = 3600.0
#: the error a callback failure records when the external side gives none
FAILED_BY_CALLBACK = "failed by callback"
#: how an attempt's error starts when its handler escaped with a ``BaseException`` that is not
#: an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``, ...)
HANDLER_PANICKED = "handler panicked"
#: how the error of an attempt whose handler returned ``RetryAfter(s)`` starts
RETRY_REQUESTED = "retry requested after"
#: how the error of a claimed job starts when a column of its row cannot be read back
UNREADABLE_JOB = "stored job cannot be read"
