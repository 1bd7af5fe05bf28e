"""The CLI's output boundary: domain values to JSON documents (``--json``) and rich tables.

One converter turns every value into JSON-ready data: timestamps as ISO 8601 in UTC, states as
their names, tuples as lists. Keys follow the value's fields, so they are stable. The human
tables show the same data; rich is imported only when a table is printed.

User data is data. Job arguments, error texts and tracebacks come from whoever inserted or ran
the job, so the human output never reads them as rich markup (``[bold]`` stays ``[bold]``, a
stray ``[/quote]`` cannot crash it) and shows control and format characters escaped (``\\x1b``,
``\\u202e``, not an escape sequence the terminal would obey or a reversed line): every printer
here goes through ``awa.escaping.printable``. JSON output keeps the data exact; it only writes
the characters JSON leaves raw (DEL, C1, format characters) as ``\\u`` escapes, which parse back
to the same characters.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

import cattrs

from awa.domain import DlqEntry, ErrorEntry, Job, JobState
from awa.escaping import printable, printable_json
from awa.operations.wording import attempts, job_result, last_error, stored, when
from awa.ports import QueueStats, UnhandledKind

__all__ = [
    "JOB_COLUMNS",
    "converter",
    "dlq_entry_data",
    "job_data",
    "job_rows",
    "print_job_result",
    "print_jobs_result",
    "print_json",
    "printable",
    "stats_data",
    "unhandled_data",
]

converter = cattrs.Converter()
converter.register_unstructure_hook(datetime, lambda d: d.astimezone(timezone.utc).isoformat())
converter.register_unstructure_hook(JobState, lambda s: s.value)


def job_data(job: Job) -> dict[str, Any]:
    data: dict[str, Any] = converter.unstructure(job)
    return data


def error_data(entry: ErrorEntry) -> dict[str, Any]:
    data: dict[str, Any] = converter.unstructure(entry)
    return data


def dlq_entry_data(entry: DlqEntry) -> dict[str, Any]:
    return {
        "job": job_data(entry.job),
        "reason": entry.reason,
        "dlq_at": converter.unstructure(entry.dlq_at),
    }


def stats_data(stats: QueueStats, now: datetime) -> dict[str, Any]:
    oldest = stats.oldest_available_at
    return {
        "queue": stats.queue,
        "counts": {state.value: stats.counts.get(state, 0) for state in JobState},
        "dlq_depth": stats.dlq_depth,
        "paused": stats.paused,
        "dlq_enabled": stats.dlq_enabled,
        "oldest_available_at": converter.unstructure(oldest) if oldest else None,
        "oldest_available_age_s": (
            round(max((now - oldest).total_seconds(), 0.0), 3) if oldest else None
        ),
        "finished_retention_s": stats.finished_retention_s,
        "failed_retention_s": stats.failed_retention_s,
        "dlq_retention_s": stats.dlq_retention_s,
        "live": stats.live,
        "concurrency_limit": stats.concurrency_limit,
        "rate_limit": converter.unstructure(stats.rate_limit),
        "key_concurrency_limit": stats.key_concurrency_limit,
        "key_rate_limit": converter.unstructure(stats.key_rate_limit),
    }


def unhandled_data(waiting: UnhandledKind, now: datetime) -> dict[str, Any]:
    """Jobs of one kind waiting where no live worker handles it (``awa queue stats``)."""
    return {
        "kind": waiting.kind,
        "runnable": waiting.runnable,
        "oldest_run_at": converter.unstructure(waiting.oldest_run_at),
        "oldest_age_s": round(max((now - waiting.oldest_run_at).total_seconds(), 0.0), 3),
    }


def print_json(document: Mapping[str, Any], out: TextIO | None = None) -> None:
    """One JSON document, keys in a stable order, then a newline. DEL, C1 and format
    characters are written as ``\\u`` escapes (JSON already escapes C0): the same data,
    harmless on a terminal."""
    stream = out or sys.stdout
    text = json.dumps(document, indent=2, ensure_ascii=False, default=str)
    stream.write(printable_json(text))
    stream.write("\n")


def _text(text: str, *, lines: bool = False) -> Any:
    """A rich ``Text``: shown as it is, never parsed as markup."""
    from rich.text import Text

    return Text(printable(text, lines=lines))


def print_table(
    title: str | None, columns: Sequence[str], rows: Iterable[Sequence[str]], out: TextIO
) -> None:
    """One row per record; a cell is one line (a newline in a value shows as ``\\x0a``)."""
    from rich.table import Table

    table = Table(
        title=None if title is None else _text(title),
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for column in columns:
        table.add_column(_text(column), overflow="fold")
    for row in rows:
        table.add_row(*(_text(cell) for cell in row))
    _console(out).print(table)


def print_fields(title: str | None, fields: Sequence[tuple[str, str]], out: TextIO) -> None:
    """A two-column ``name  value`` block for one record."""
    from rich.table import Table

    table = Table(
        title=None if title is None else _text(title),
        title_justify="left",
        show_header=False,
        box=None,
        pad_edge=False,
    )
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in fields:
        table.add_row(_text(name), _text(value))
    _console(out).print(table)


def print_line(text: str, out: TextIO) -> None:
    """``text`` as it is, its lines kept (a traceback, an error of several lines)."""
    _console(out).print(_text(text, lines=True), soft_wrap=True)


def _console(out: TextIO) -> Any:
    from rich.console import Console

    # not a terminal (a pipe, a file, a test): wide, so that a row stays one line for grep
    width = None if out.isatty() else 200
    return Console(
        file=out, width=width, highlight=False, markup=False, emoji=False, soft_wrap=False
    )


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


# -- jobs as rows and lines (``job list``, ``dlq retry-bulk``, the single-job commands) ----------

JOB_COLUMNS = ["id", "kind", "queue", "state", "attempt", "prio", "run_at", "last error"]


def job_rows(jobs: Iterable[Job]) -> Iterator[list[str]]:
    """One row of ``JOB_COLUMNS`` a job."""
    for job in jobs:
        yield [
            str(job.id),
            job.kind,
            job.queue,
            job.state.value,
            attempts(job),
            str(job.priority),
            stored(job, "run_at", when(job.run_at)),
            last_error(job),
        ]


def print_job_result(
    verb: str, job: Job, out: TextIO, *, as_json: bool, about: Mapping[str, Any] | None = None
) -> None:
    """What a command did to one job: with ``--json``, ``{**about, "job": job}``; else one line
    naming the job, the ``verb`` and where that left it."""
    if as_json:
        print_json({**(about or {}), "job": job_data(job)}, out)
        return
    print_line(job_result(verb, job), out)


def print_jobs_result(
    verb: str, jobs: Sequence[Job], line: str, out: TextIO, *, as_json: bool
) -> None:
    """What a bulk command did to many jobs: with ``--json``, ``{verb: n, "jobs": [...]}``;
    else ``line`` and a table of the jobs."""
    if as_json:
        print_json({verb: len(jobs), "jobs": [job_data(j) for j in jobs]}, out)
        return
    print_line(line, out)
    if jobs:
        print_table(None, JOB_COLUMNS, job_rows(jobs), out)
