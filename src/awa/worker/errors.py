"""What a worker process refuses to start with."""

from __future__ import annotations

from awa.domain import AwaError

__all__ = ["WorkerError"]


class WorkerError(AwaError):
    """The worker cannot start as asked (an application it cannot load, a port it cannot
    listen on, a setting it cannot read); the message is one line saying which."""
