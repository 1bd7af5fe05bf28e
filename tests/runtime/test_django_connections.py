"""What awa does with Django's connections around a handler, without a PostgreSQL server: a
connection that is past ``CONN_MAX_AGE`` is closed after the job, in the thread that ran it
(a sync handler's, or asgiref's for ``sync_to_async``); a healthy persistent one is kept; a
failure to close is a warning, not the job's; and a process that never imported Django
does not import it. tests/postgres/test_django_connections.py restarts a real server.

Each case runs in a process of its own (tests/runtime/django_handlers.py): Django's settings
are configured once per process, and other tests here configure them their own way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("django")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("django_handlers.py")


def _run(case: str) -> tuple[dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), case],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
        env={**env, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.mark.parametrize("case", ["sync", "async"])
def test_a_connection_past_its_max_age_is_closed_after_the_job_on_its_thread(case: str) -> None:
    found, _ = _run(case)
    # the second job's thread held no connection: the first one's was closed after it
    assert found == {
        "held": [False, False],
        "threads": 1,
        "states": ["completed", "completed"],
        "django_imported": True,
    }


def test_a_healthy_persistent_connection_is_kept_for_the_next_job() -> None:
    found, _ = _run("sync-persistent")
    assert found["held"] == [False, True]
    assert found["threads"] == 1


def test_a_failure_to_close_is_a_warning_and_the_jobs_complete() -> None:
    found, stderr = _run("close-fails")
    assert found["states"] == ["completed", "completed"]
    assert "closing Django's old database connections failed" in stderr
    assert "RuntimeError: the database went away" in stderr


def test_an_async_job_does_not_wait_for_the_thread_another_holds() -> None:
    """The close after async handlers is queued on asgiref's shared thread, not awaited: a
    job that never touches the database completes while another holds that thread."""
    found, _ = _run("busy-thread")
    assert found == {"completed_meanwhile": True}


def test_a_connection_in_an_open_transaction_is_left_alone() -> None:
    """A Django test case's async test runs an async handler through ``awa.testing``: the
    handler's queries, and the close after it, run on the test's thread, whose connection
    holds the test's transaction; closing it would break the rest of the test."""
    found, _ = _run("test-transaction")
    assert found == {"states": ["completed"], "transaction_intact": True}


@pytest.mark.parametrize("case", ["unconfigured", "no-django"])
def test_without_django_settings_handlers_run_as_before(case: str) -> None:
    found, _ = _run(case)
    assert found["states"] == ["completed"] * 3
    # awa never imports Django itself
    assert found["django_imported"] is (case == "unconfigured")
