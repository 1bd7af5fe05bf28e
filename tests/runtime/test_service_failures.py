"""A service that keeps failing backs off and is logged once per episode: one WARNING when
the database goes away, one INFO when it is back, never a traceback a second; a bug is an
ERROR with its traceback, repeated at most every five minutes. Driven step by step on a
manual clock, as a simulation drives the scheduler."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import DatabaseError
from awa.runtime.scheduler import Scheduler
from awa.runtime.service_failures import ERROR_BACKOFF_MAX_S, ERROR_REPEAT_S


class Flaky:
    """A service that raises ``errors`` one per run, then works (every 5 s)."""

    name = "maintenance"

    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors

    async def run_once(self, now: datetime) -> float | None:
        if self.errors:
            raise self.errors.pop(0)
        return 5.0


def drive(service: Flaky, runs: int) -> tuple[Scheduler, list[float]]:
    """Run ``service`` ``runs`` times, each when it is next due; the waits it was given."""
    clock = ManualClock()
    scheduler = Scheduler(clock, [service])

    async def story() -> list[float]:
        scheduler.attach(clock.now())
        waits = []
        for _ in range(runs):
            due = scheduler.next_due()
            assert due is not None
            clock.set(due)
            await scheduler.run(service.name, due)
            after = scheduler.next_due()
            assert after is not None
            waits.append((after - due).total_seconds())
        return waits

    return scheduler, asyncio.run(story())


def awa_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "awa.runtime"]


def test_a_database_outage_is_one_warning_then_backoff_then_one_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="awa.runtime")
    lost = "maintenance failed: OperationalError: server closed the connection"
    scheduler, waits = drive(Flaky([DatabaseError(lost) for _ in range(40)]), runs=42)
    assert waits[:8] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert max(waits) == ERROR_BACKOFF_MAX_S
    assert waits[-2:] == [5.0, 5.0]  # working again: its own period, and no more backoff
    records = awa_records(caplog)
    assert [(r.levelname, r.getMessage()) for r in records] == [
        (
            "WARNING",
            "maintenance failed: maintenance failed: OperationalError: server closed the"
            " connection; retrying in 1s, then less often (every 30s at most)",
        ),
        ("INFO", "maintenance works again, after 40 failed tries over 1081.0s"),
    ]
    assert all(r.exc_info is None for r in records)  # an outage is no bug: no traceback
    assert scheduler.succeeded_at()["maintenance"] is not None


def test_each_failure_of_an_outage_has_its_traceback_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="awa.runtime")
    drive(Flaky([DatabaseError("connection refused") for _ in range(3)]), runs=4)
    debug = [r for r in awa_records(caplog) if r.levelno == logging.DEBUG]
    assert [r.getMessage() for r in debug] == [
        f"maintenance failed ({n} in a row)" for n in (1, 2, 3)
    ]
    assert all(r.exc_info is not None for r in debug)


def test_a_bug_is_an_error_with_its_traceback_at_most_every_five_minutes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="awa.runtime")
    _, waits = drive(Flaky([KeyError(f"row {n}") for n in range(30)]), runs=31)
    errors = [r for r in awa_records(caplog) if r.levelno == logging.ERROR]
    # tries at 0, 1, 3, 7, 15, 31 s, then every 30 s: at 301 s five minutes have passed since
    # the first line, and at 601 s since the second
    assert (sum(waits[:14]), sum(waits[:24])) == (301.0, 601.0)
    assert [r.getMessage().split(";")[0] for r in errors] == [
        "maintenance failed (1 in a row since 2030-01-01T00:00:00+00:00)",
        "maintenance failed (15 in a row since 2030-01-01T00:00:00+00:00)",
        "maintenance failed (25 in a row since 2030-01-01T00:00:00+00:00)",
    ]
    assert all(r.exc_info is not None and r.exc_info[0] is KeyError for r in errors)
    assert ERROR_REPEAT_S == 300.0
    [back] = [r for r in awa_records(caplog) if r.levelno == logging.INFO]
    assert back.getMessage().startswith("maintenance works again, after 30 failed tries")


def test_a_bug_during_an_outage_is_still_an_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="awa.runtime")
    drive(Flaky([DatabaseError("gone"), DatabaseError("gone"), ValueError("bug")]), runs=4)
    assert [r.levelname for r in awa_records(caplog)] == ["WARNING", "ERROR", "INFO"]


def test_a_new_outage_after_recovery_warns_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="awa.runtime")
    service = Flaky([DatabaseError("gone")])
    scheduler, _ = drive(service, runs=2)
    service.errors.append(DatabaseError("gone again"))
    clock = scheduler.clock
    assert isinstance(clock, ManualClock)

    async def again() -> None:
        for _ in range(2):
            due = scheduler.next_due()
            assert due is not None
            clock.set(due)
            await scheduler.run(service.name, due)

    asyncio.run(again())
    assert [r.levelname for r in awa_records(caplog)] == ["WARNING", "INFO", "WARNING", "INFO"]
    assert scheduler.next_due() == clock.now() + timedelta(seconds=5)
