"""``loop_connection.LoopBound``: one timer on the event loop bounds a run of calls on one
connection. A call that outlives the bound has its connection abandoned and says so; calls
within it never do, however many run and however long the run lasts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from awa.adapters.postgres.inserts.loop_connection import LoopBound
from awa.domain import DatabaseError

BOUND_S = 0.05
SLACK_S = 0.5


class _Conn:
    """All ``abandon`` asks of a connection is its socket: this one counts the asks."""

    def __init__(self) -> None:
        self.abandoned_at: list[float] = []

    def fileno(self) -> int:
        self.abandoned_at.append(asyncio.get_running_loop().time())
        raise OSError("no socket here")


def _bound(conn: _Conn) -> LoopBound:
    fake: Any = conn
    return LoopBound(fake, BOUND_S, "inserting jobs")


async def _unanswered_call(bound: LoopBound, seconds: float) -> None:
    """A call that waits ``seconds`` for an answer, then fails as an abandoned socket does."""
    with bound.call():
        await asyncio.sleep(seconds)
        raise OSError("the socket was shut down")


def test_a_call_that_outlives_its_bound_is_abandoned_and_fails_saying_so() -> None:
    async def story() -> None:
        conn = _Conn()
        bound = _bound(conn)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(DatabaseError, match=r"within 0.05s \(call_timeout_s\)"):
            await _unanswered_call(bound, BOUND_S * 4)
        [abandoned] = conn.abandoned_at
        assert started + BOUND_S <= abandoned < started + BOUND_S + SLACK_S

    asyncio.run(story())


def test_calls_within_their_bound_are_never_abandoned_however_long_the_run() -> None:
    async def story() -> None:
        conn = _Conn()
        bound = _bound(conn)
        loop = asyncio.get_running_loop()
        run_until = loop.time() + BOUND_S * 6
        calls = 0
        while loop.time() < run_until:  # back to back and with pauses, over six bounds
            with bound.call():
                await asyncio.sleep(BOUND_S / 5)
            calls += 1
            if calls % 7 == 0:
                await asyncio.sleep(BOUND_S * 1.5)
        assert conn.abandoned_at == []
        bound.cancel()

    asyncio.run(story())


def test_a_slow_call_after_quick_ones_gets_its_own_whole_bound() -> None:
    async def story() -> None:
        conn = _Conn()
        bound = _bound(conn)
        loop = asyncio.get_running_loop()
        for _ in range(3):  # the timer was set by the first of these
            with bound.call():
                await asyncio.sleep(BOUND_S / 4)
        started = loop.time()
        with pytest.raises(DatabaseError, match="call_timeout_s"):
            await _unanswered_call(bound, BOUND_S * 3)
        [abandoned] = conn.abandoned_at
        assert abandoned >= started + BOUND_S

    asyncio.run(story())


def test_an_error_within_the_bound_is_not_blamed_on_it() -> None:
    async def story() -> None:
        conn = _Conn()
        bound = _bound(conn)
        with pytest.raises(OSError, match="refused"), bound.call():
            raise OSError("refused")
        assert conn.abandoned_at == []
        bound.cancel()

    asyncio.run(story())
