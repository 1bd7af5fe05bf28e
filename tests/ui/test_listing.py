"""The listings (``/jobs``, ``/dlq``) read job summaries: a page costs the same memory whatever
the jobs carry, because no store reads a listed job's args (or metadata, progress, error
history) for it."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from awa.adapters.memory import ManualClock
from awa.domain import Fail, NewJob
from awa.ports import ClaimStore, Finish

ARGS_CHARS = 1_000_000
JOBS = 24


def _select_list(statement: str) -> str:
    found = re.search(r"SELECT(.*?)\bFROM\b", statement, re.S)
    assert found is not None, statement
    return found.group(1)


@pytest.mark.parametrize("adapter", ["sqlite", "postgres"])
def test_the_summary_statements_select_no_heavy_column(adapter: str) -> None:
    if adapter == "sqlite":
        from awa.adapters.sqlite._sql import SQL
    else:
        from awa.adapters.postgres._sql import SQL
    for name in ("list_job_summaries", "list_dlq_summaries"):
        selected = _select_list(SQL[name])
        for heavy in ("args", "metadata", "progress", "callback_result"):
            assert not re.search(rf"\b{heavy}\b", selected), (adapter, name, heavy)
        # the error history is read only for the start of its last entry's text
        [last_error] = re.findall(
            r"(?:CASE\b.*?\bEND|substr\(.*?\))\s+AS last_error", selected, re.S
        )
        assert "substr(" in last_error, (adapter, name)
        assert not re.search(r"\berrors\b", selected.replace(last_error, "")), (adapter, name)


def test_a_listing_page_reads_no_args_whatever_their_size(
    store: ClaimStore, clock: ManualClock, dashboard: Callable[..., TestClient]
) -> None:
    """24 jobs and 24 dead letters of 1 MB of args each: a view of either listing allocates
    less than one job's args (without summaries it read all 24 MB)."""
    payload = {"blob": "x" * ARGS_CHARS}
    store.set_dlq_enabled("dead", True)
    store.insert([NewJob(kind="big", queue="media", args=payload) for _ in range(JOBS)])
    store.insert([NewJob(kind="big", queue="dead", args=payload, max_attempts=1)] * JOBS)
    for claimed in store.claim("dead", limit=JOBS):
        store.finish([Finish(claimed.lease, Fail("ValueError: " + "e" * 5000, terminal=True))])
    del payload
    ui = dashboard()
    for path in ("/jobs?limit=25", "/dlq"):
        assert ui.get(path).status_code == 200  # warm: the template compiled, the pool open
        tracemalloc.start()
        try:
            page = ui.get(path)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert page.status_code == 200
        assert page.text.count('<tr id="') == JOBS, path
        assert peak < ARGS_CHARS, f"{path}: {peak:,} bytes allocated for one view"
