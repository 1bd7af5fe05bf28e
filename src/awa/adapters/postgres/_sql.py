"""The adapter's SQL: one statement per ``sql/*.sql`` file, read once at import.

Each file starts with a comment saying its purpose, parameters, the lifecycle transition it
carries out and the index it relies on. Values are always bound (``%(name)s``), never formatted
into the text.

The job's columns are declared once, in ``JOB_COLUMNS`` (``_rows.py``): a statement names them
as ``{job_columns}``, or ``{j.job_columns}`` with a table alias, and the loader writes the list
out. The rows that come back are checked against ``cursor.description`` (``_rows.jobs_from``).
"""

from __future__ import annotations

import re
from importlib import resources

from awa.adapters.postgres._rows import JOB_COLUMNS

__all__ = ["SQL", "expand_job_columns", "load_statements"]

_JOB_COLUMNS_TOKEN = re.compile(r"\{(?:(\w+)\.)?job_columns\}")


def expand_job_columns(text: str) -> str:
    """``{job_columns}`` and ``{alias.job_columns}`` written out, in ``JOB_COLUMNS`` order."""

    def columns(match: re.Match[str]) -> str:
        prefix = f"{match.group(1)}." if match.group(1) else ""
        return ", ".join(prefix + column for column in JOB_COLUMNS)

    return _JOB_COLUMNS_TOKEN.sub(columns, text)


def load_statements() -> dict[str, str]:
    """Every statement by file name (without ``.sql``)."""
    folder = resources.files("awa.adapters.postgres") / "sql"
    return {
        entry.name.removesuffix(".sql"): expand_job_columns(entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    }


SQL = load_statements()
