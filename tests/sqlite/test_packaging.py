"""The SQLite adapter ships whole in the wheel: every statement and migration is package
data, and a store opened from an unpacked wheel alone migrates a file and runs a job's
lifecycle."""

from __future__ import annotations

from pathlib import Path

from tests.wheel import build_wheel, run_from_wheel

ADAPTER = Path(__file__).resolve().parents[2] / "src" / "awa" / "adapters" / "sqlite"

FROM_WHEEL = """
import awa.adapters.sqlite as sqlite
from awa.domain import Complete, NewJob
from awa.ports import Finish
assert sqlite.__file__.startswith(WHEEL_DIR), sqlite.__file__
store = sqlite.SqliteStore("jobs.db")
store.insert([NewJob(kind="k")])
[job] = store.claim("default", limit=1)
[done] = store.finish([Finish(job.lease, Complete())])
print(done.job.state.value, "from", sqlite.__file__)
"""


def test_the_wheel_holds_every_statement_and_migration_and_runs_from_them(
    tmp_path: Path,
) -> None:
    wheel = build_wheel(tmp_path / "dist")
    data = sorted(
        f"awa/adapters/sqlite/{p.relative_to(ADAPTER).as_posix()}"
        for folder in ("sql", "migrations")
        for p in (ADAPTER / folder).glob("*.sql")
    )
    assert "awa/adapters/sqlite/migrations/0001_initial.sql" in data
    unpacked, result = run_from_wheel(wheel, data, FROM_WHEEL, tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"completed from {unpacked}" in result.stdout
