"""A service that keeps failing: when it runs again, and what the log says about it.

While the database restarts, every service fails at every try; a line (and a traceback) per
try would bury the one line that matters under hundreds. So a run of failures is one episode:

* the wait before the next try doubles from ``ERROR_BACKOFF_S`` up to ``ERROR_BACKOFF_MAX_S``
  (1, 2, 4, 8, 16, 30, 30 ... seconds), and starts again from 1 s once a run succeeds;
* a ``DatabaseError`` (the store could not reach or use its database: an expected outage) is
  one WARNING when the episode starts, without a traceback (DEBUG has one per try);
* any other exception is a bug: ERROR with its traceback when it first appears in the episode,
  and again at most every ``ERROR_REPEAT_S`` while it goes on, saying how many tries failed;
* the first run that succeeds after failures is one INFO line saying so.

The cap is 30 s so that a worker takes up its work within half a minute of the database's
return, well inside the default heartbeat staleness (a heartbeat that runs as a service backs
off too).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import attrs

from awa.domain import DatabaseError

__all__ = [
    "ERROR_BACKOFF_MAX_S",
    "ERROR_BACKOFF_S",
    "ERROR_REPEAT_S",
    "FailureEpisode",
    "backoff_s",
]

log = logging.getLogger("awa.runtime")

#: how long a service waits after its first failure in a row
ERROR_BACKOFF_S = 1.0
#: the longest it waits between tries, however long it keeps failing
ERROR_BACKOFF_MAX_S = 30.0
#: an unexpected error that keeps failing a service is logged again at most this often
ERROR_REPEAT_S = 300.0


def backoff_s(failures: int) -> float:
    """The wait after the ``failures``-th failure in a row (1, 2, 4 ... up to 30 s)."""
    return min(ERROR_BACKOFF_S * 2.0 ** min(failures - 1, 32), ERROR_BACKOFF_MAX_S)


@attrs.define
class FailureEpisode:
    """One service's failures in a row, and what of them has been logged."""

    service: str
    failures: int = 0
    since: datetime | None = None  # when the first failure of the episode happened
    warned: bool = False  # the outage's WARNING is out
    error_logged_at: datetime | None = None  # when an unexpected error was last logged

    def failed(self, error: Exception, now: datetime) -> float:
        """Count a failure at ``now``, log it if it is news; the seconds to wait."""
        self.failures += 1
        if self.since is None:
            self.since = now
        delay_s = backoff_s(self.failures)
        if isinstance(error, DatabaseError):
            if not self.warned:
                self.warned = True
                log.warning(
                    "%s failed: %s; retrying in %gs, then less often (every %gs at most)",
                    self.service,
                    error,
                    delay_s,
                    ERROR_BACKOFF_MAX_S,
                )
            log.debug("%s failed (%d in a row)", self.service, self.failures, exc_info=error)
        elif self.error_logged_at is None or now - self.error_logged_at >= timedelta(
            seconds=ERROR_REPEAT_S
        ):
            self.error_logged_at = now
            log.error(
                "%s failed (%d in a row since %s); retrying in %gs",
                self.service,
                self.failures,
                _moment(self.since),
                delay_s,
                exc_info=error,
            )
        return delay_s

    def succeeded(self, now: datetime) -> None:
        """A run went through: the episode, if there was one, is over."""
        if self.failures == 0:
            return
        assert self.since is not None
        log.info(
            "%s works again, after %d failed tries over %.1fs",
            self.service,
            self.failures,
            (now - self.since).total_seconds(),
        )
        self.failures, self.since, self.warned, self.error_logged_at = 0, None, False, None


def _moment(at: datetime) -> str:
    return at.isoformat(timespec="seconds")
