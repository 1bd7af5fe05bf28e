"""The README's quickstart, given a PostgreSQL URL, runs on PostgreSQL as written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "quickstart.py"


def test_quickstart_on_postgresql_completes_both_jobs(empty_database: str) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), empty_database],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "job 1 send_email: completed after 1 attempt(s)" in result.stdout
    assert "job 2 send_email: completed after 2 attempt(s)" in result.stdout
    with psycopg.connect(empty_database) as conn:  # it migrated the database itself
        rows = conn.execute("SELECT id, state FROM awa.jobs ORDER BY id").fetchall()
    assert rows == [(1, "completed"), (2, "completed")]
