"""The adapter's SQL: one statement per ``sql/*.sql`` file, read once at import.

Each file starts with a comment saying its purpose, parameters, the lifecycle transition it
carries out and the index it relies on. Values are always bound (``%(name)s``), never formatted
into the text.

The job's columns are declared once, in ``JOB_COLUMNS`` (``_rows.py``): a statement names them
as ``{job_columns}``, or ``{j.job_columns}`` with a table alias, and the loader writes the list
out (a schedule's likewise, ``{schedule_columns}``, and the columns an attempt can change,
``{attempt_columns}``). The rows that come back are checked
against ``cursor.description`` (``_rows.jobs_from``).

A part two statements share is written once, in ``sql/NAME.sqlpart``, and a statement (or
another part) names it as ``{part:NAME}``: new jobs from array parameters
(``new_job_arrays``), as rows with their unique keys (``new_jobs``), the insert of those rows
(``insert_new_jobs``, shared by ``insert_jobs.sql`` and ``fire_schedule.sql``), the insert
that respects unique keys (``insert_unique``, shared by ``insert_jobs.sql`` and
``insert_jobs_portable.sql``), the guarded completion of many attempts (``complete_running``,
shared by ``complete_many.sql`` and ``complete_many_claimed.sql``), the filters and page of
every listing (``listing_page``), and what every claim statement's candidates meet: the
claim's time (``claim_now``), claimable now and passed by the ordering filter
(``runnable_now``, ``ordering_free``), a priority band's window (``band_window``), the keys
with work (``runnable_keys``) and the key-less jobs' window (``keyless_window``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources

from awa.adapters.postgres._rows import ATTEMPT_COLUMNS, JOB_COLUMNS, SCHEDULE_COLUMNS

__all__ = ["SQL", "build_statements", "expand_job_columns", "load_statements"]

_COLUMNS_TOKEN = re.compile(r"\{(?:(\w+)\.)?(job|attempt|schedule)_columns\}")
_COLUMNS = {"job": JOB_COLUMNS, "attempt": ATTEMPT_COLUMNS, "schedule": SCHEDULE_COLUMNS}
_PART_TOKEN = re.compile(r"\{part:(\w+)\}")


def expand_job_columns(text: str) -> str:
    """``{job_columns}`` and ``{alias.job_columns}`` written out, in ``JOB_COLUMNS`` order (and
    ``{attempt_columns}`` in ``ATTEMPT_COLUMNS`` order, ``{schedule_columns}`` in
    ``SCHEDULE_COLUMNS`` order)."""

    def columns(match: re.Match[str]) -> str:
        prefix = f"{match.group(1)}." if match.group(1) else ""
        return ", ".join(prefix + column for column in _COLUMNS[match.group(2)])

    return _COLUMNS_TOKEN.sub(columns, text)


def load_statements() -> dict[str, str]:
    """Every statement by file name (without ``.sql``), its parts and columns written out."""
    folder = resources.files("awa.adapters.postgres") / "sql"
    return build_statements(
        {entry.name: entry.read_text(encoding="utf-8") for entry in folder.iterdir()}
    )


def build_statements(texts: Mapping[str, str]) -> dict[str, str]:
    """The statements of ``texts`` (``{file name: text}``, the ``.sql`` and ``.sqlpart`` files),
    written out as ``load_statements`` does; the mutation tool swaps one file's text this way."""
    parts = {
        name.removesuffix(".sqlpart"): _without_comments(text)
        for name, text in texts.items()
        if name.endswith(".sqlpart")
    }

    def part(match: re.Match[str]) -> str:
        return _PART_TOKEN.sub(part, parts[match.group(1)])  # a part may include parts

    # the header is for the file's reader; without it insert_jobs.sql fits the 4 KB under which
    # psycopg keeps a statement's parsed form instead of parsing it again at every call
    return {
        name.removesuffix(".sql"): expand_job_columns(
            _PART_TOKEN.sub(part, _without_comments(text))
        )
        for name, text in texts.items()
        if name.endswith(".sql")
    }


def _without_comments(text: str) -> str:
    """A file's header comment is for its reader, not for the statement sent."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("--")).strip()


SQL = load_statements()
