"""Helpers for tests that run ``awa`` as a real process: a free port, a GET that never
raises, and a bounded wait on a condition that fails as soon as the process dies."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

__all__ = ["WAIT_S", "free_port", "get", "wait_for"]

WAIT_S = 30.0


def free_port() -> int:
    """A port nothing listens on (nothing will, unless something binds it meanwhile)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    """``(status, body)`` of a GET; ``(0, "")`` when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()
    except OSError:
        return 0, ""


def wait_for(
    proc: subprocess.Popen[bytes], condition: Callable[[], Any], what: str, log: Callable[[], str]
) -> Any:
    """Poll ``condition`` until it returns something truthy, and return that; fail with the
    process's ``log`` when it exits first or after ``WAIT_S``."""
    give_up = time.monotonic() + WAIT_S
    while time.monotonic() < give_up:
        result = condition()
        if result:
            return result
        if proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited\n{log()}")
        time.sleep(0.05)  # the poll period, not a synchronisation
    raise AssertionError(f"{what}: not within {WAIT_S}s\n{log()}")
