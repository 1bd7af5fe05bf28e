"""The ``awa`` commands in docs/periodic-jobs.md run as written, against a database holding the
schedule they name."""

from __future__ import annotations

import pathlib
import re
import shlex
from collections.abc import Callable

from awa.adapters.postgres import PostgresStore
from awa.domain import NewJob, Schedule
from tests.cli.conftest import Ran

DOCS = pathlib.Path(__file__).parents[2] / "docs"
CONSOLE = re.compile(r"```console\n(.*?)```", re.DOTALL)


def _commands(page: str) -> list[list[str]]:
    """Every ``$ awa ...`` line of the page's console blocks, without its comment."""
    found = []
    for block in CONSOLE.findall((DOCS / page).read_text()):
        for line in block.splitlines():
            if line.startswith("$ awa "):
                found.append(shlex.split(line[2:], comments=True)[1:])
    return found


def test_the_periodic_jobs_page_commands_run(awa: Callable[..., Ran], store: PostgresStore) -> None:
    store.register_schedules(
        [Schedule(name="nightly", cron="0 3 * * *", job=NewJob(kind="report"))]
    )
    commands = _commands("periodic-jobs.md")
    assert [c[:2] for c in commands] == [
        ["cron", "list"],
        ["cron", "pause"],
        ["cron", "resume"],
        ["cron", "trigger"],
        ["cron", "remove"],
    ]
    for command in commands:
        ran = awa(*command)
        assert ran.code == 0, (command, ran.stderr)
    assert store.list_schedules() == []
