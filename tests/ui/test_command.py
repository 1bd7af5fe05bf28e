"""``awa ui`` as a real process on PostgreSQL: it serves the dashboard, with the token when one
is set, and says where; it refuses, in one line, what it must not do."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from awa.adapters.postgres import PostgresStore
from awa.domain import NewJob
from tests.http.conftest import ROOT, serving_command

pytestmark = pytest.mark.postgres

TOKEN = "command-test-token-0123456789"


def test_awa_ui_serves_the_dashboard_of_the_database(pg_clean_url: str) -> None:
    store = PostgresStore(pg_clean_url)
    try:
        store.insert([NewJob(kind="send", queue="email")])
        store.summarize_queues()
    finally:
        store.close()
    env = {"AWA_DATABASE_URL": pg_clean_url}
    with serving_command(env=env, command=("ui",)) as base:
        page = httpx.get(base + "/")
        assert page.status_code == 200
        assert 'id="queue-email"' in page.text
        assert httpx.get(base + "/jobs/1").status_code == 200


def test_awa_ui_with_a_token_asks_for_it(pg_clean_url: str) -> None:
    env = {"AWA_DATABASE_URL": pg_clean_url, "AWA_UI_TOKEN": TOKEN}
    with serving_command("--read-only", env=env, command=("ui",)) as base:
        assert httpx.get(base + "/").status_code == 303
        page = httpx.get(base + "/", headers={"authorization": f"Bearer {TOKEN}"})
        assert page.status_code == 200
        assert "read-only" in page.text


def test_awa_ui_names_an_unreachable_database_before_listening() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "awa", "ui", "--database-url", "postgresql://u@127.0.0.1:1/x"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("awa: error: cannot connect")
    assert "127.0.0.1" in result.stderr
    assert "Traceback" not in result.stderr
