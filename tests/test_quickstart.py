"""The README's main-job command runs with no set-up: in memory when asked (SQLite, its
default, in ``tests/sqlite/test_quickstart_sqlite.py``)."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).parents[1] / "examples" / "quickstart.py"


def test_quickstart_runs_in_memory_and_completes_both_jobs() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "memory://"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "job 1 send_email: completed after 1 attempt(s)" in result.stdout
    assert "job 2 send_email: completed after 2 attempt(s)" in result.stdout
