"""The SQLite adapter's SQL: one statement per ``sql/*.sql`` file, read once at import.

Each file starts with a comment saying its purpose, parameters, the lifecycle transition it
carries out and the index it relies on. Values are always bound (``:name``), never formatted
into the text. A statement names the job's columns as ``{job_columns}`` (``{j.job_columns}``
with a table alias) and their parameters as ``{job_params}``; a schedule's likewise. The
loader writes the lists out from ``_rows.JOB_COLUMNS`` and ``_rows.SCHEDULE_COLUMNS``. A part
statements share is written once, in ``sql/NAME.sqlpart``, and named as ``{part:NAME}``: the
filters and page of every listing (``listing_page``), the columns of a summary
(``summary_columns``).
"""

from __future__ import annotations

import re
from importlib import resources

from awa.adapters.sqlite._rows import JOB_COLUMNS, SCHEDULE_COLUMNS

__all__ = ["SQL"]

_TOKEN = re.compile(r"\{(?:(\w+)\.)?(job|schedule)_(columns|params)\}")
_COLUMNS = {"job": JOB_COLUMNS, "schedule": SCHEDULE_COLUMNS}
_PART_TOKEN = re.compile(r"\{part:(\w+)\}")


def _expand(text: str) -> str:
    def listed(match: re.Match[str]) -> str:
        alias, table, what = match.groups()
        prefix = ":" if what == "params" else f"{alias}." if alias else ""
        return ", ".join(prefix + column for column in _COLUMNS[table])

    return _TOKEN.sub(listed, text)


def _load() -> dict[str, str]:
    folder = resources.files("awa.adapters.sqlite") / "sql"
    texts = {entry.name: entry.read_text(encoding="utf-8") for entry in folder.iterdir()}
    parts = {
        name.removesuffix(".sqlpart"): _without_header(text)
        for name, text in texts.items()
        if name.endswith(".sqlpart")
    }

    def part(match: re.Match[str]) -> str:
        return parts[match.group(1)]

    return {
        name.removesuffix(".sql"): _expand(_PART_TOKEN.sub(part, text))
        for name, text in texts.items()
        if name.endswith(".sql")
    }


def _without_header(text: str) -> str:
    """A part's header comment is for its reader: the statement that includes it has its own."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("--")).strip()


SQL = _load()
