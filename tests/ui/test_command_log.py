"""``awa ui`` as a real process writes the dashboard's own log lines (``awa.ui``) to stderr at
its ``--log-level``: uvicorn configures only its own loggers, so without a handler of awa's
the audit line of an action was never written."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from awa.adapters.sqlite import SqliteStore
from awa.domain import NewJob
from tests.http.conftest import serving_command

_CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


def _pause_media(base: str) -> None:
    with httpx.Client(base_url=base) as browser:
        page = browser.get("/queues/media/pause")
        assert page.status_code == 200
        found = _CSRF.search(page.text)
        assert found is not None
        done = browser.post("/queues/media/pause", data={"csrf": found.group(1)})
        assert done.status_code == 200, done.text


def _serve_and_pause(tmp_path: Path, *args: str) -> str:
    path = tmp_path / "jobs.db"
    with SqliteStore(str(path)) as store:
        store.insert([NewJob(kind="transcode", queue="media")])
    written: list[str] = []
    env = {"AWA_DATABASE_URL": f"sqlite:///{path}"}
    with serving_command(*args, env=env, command=("ui",), stderr=written) as base:
        _pause_media(base)
    [stderr] = written
    return stderr


def test_awa_ui_writes_the_audit_line_of_an_action_at_the_default_level(tmp_path: Path) -> None:
    stderr = _serve_and_pause(tmp_path)
    [line] = [line for line in stderr.splitlines() if "dashboard action" in line]
    assert line.startswith("INFO:")
    assert "awa.ui: dashboard action from 127.0.0.1: queue media paused" in line
    assert "Traceback" not in stderr


def test_awa_ui_leaves_the_audit_line_out_below_its_log_level(tmp_path: Path) -> None:
    stderr = _serve_and_pause(tmp_path, "--log-level", "warning")
    assert "dashboard action" not in stderr
