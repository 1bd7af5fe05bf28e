"""Calls from the event loop into the (synchronous) store port, each bounded in time.

A store call runs on a small thread pool. One that outlives its bound is abandoned: the
awaiting service gets a ``DatabaseError`` and is scheduled again, so a wedged connection can
delay a service but never stop it. The abandoned thread is left to finish on its own (the
PostgreSQL adapter's own watchdog breaks its connection); when every thread of the pool is
held by such calls, later calls get a fresh pool instead of queueing behind them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from awa.domain import DatabaseError
from awa.runtime.attempts import Flag

__all__ = ["STORE_THREADS", "StoreCalls"]

log = logging.getLogger("awa.runtime")
R = TypeVar("R")

STORE_THREADS = 4


class StoreCalls:
    """Runs store calls for one runtime: on its threads, or inline on the loop's thread (the
    simulation, where every step must happen in a chosen order)."""

    def __init__(self, *, inline: bool, timeout_s: float) -> None:
        self.inline = inline
        self.timeout_s = timeout_s
        self._pool = self._new_pool()
        self._lock = threading.Lock()
        self._abandoned = 0  # calls that outlived their bound and still hold a thread

    @staticmethod
    def _new_pool() -> ThreadPoolExecutor:
        return ThreadPoolExecutor(STORE_THREADS, thread_name_prefix="awa-store")

    async def __call__(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        if self.inline:
            return fn(*args, **kwargs)
        call: Future[R] = self._pool.submit(functools.partial(fn, *args, **kwargs))
        waiting = asyncio.wrap_future(call)
        # one timer per call: cheaper than asyncio.wait_for, which wraps the wait in a task
        expired = Flag()
        timer = asyncio.get_running_loop().call_later(self.timeout_s, _expire, waiting, expired)
        try:
            return await waiting
        except asyncio.CancelledError:
            if not expired.is_set():
                raise  # cancelled from outside, not by the bound
            self._abandon(call)
            name = getattr(fn, "__name__", "store call")
            raise DatabaseError(
                f"{name} took longer than {self.timeout_s:g}s and was abandoned"
            ) from None
        finally:
            timer.cancel()

    def _abandon(self, call: Future[Any]) -> None:
        with self._lock:
            self._abandoned += 1
            if self._abandoned >= STORE_THREADS:
                log.warning(
                    "%d store calls are stuck past their bound; starting a fresh thread pool",
                    self._abandoned,
                )
                self._pool.shutdown(wait=False)
                self._pool = self._new_pool()
                self._abandoned = 0
                return
            pool = self._pool
        call.add_done_callback(functools.partial(self._returned, pool))

    def _returned(self, pool: ThreadPoolExecutor, _: Future[Any]) -> None:
        with self._lock:
            if pool is self._pool:  # a replaced pool's threads no longer count
                self._abandoned -= 1

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False)


def _expire(waiting: asyncio.Future[Any], expired: Flag) -> None:
    expired.set()
    waiting.cancel()
