"""How the async client runs a store call: in a thread, so that the event loop never waits on
the database. The generated sync verbs (``sync_verbs.py``) call the store directly instead."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["AsyncCalls"]

R = TypeVar("R")


class AsyncCalls:
    async def _call(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)
