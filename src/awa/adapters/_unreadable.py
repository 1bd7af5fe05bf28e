"""Reading a stored job whose row holds a value this version cannot read back.

awa never writes such a value (``awa.domain.validation`` bounds everything a caller gives), but
a row may be written by hand, by an older version, or by a bug. A store reads its rows the fast
way; when that fails for a row, it reads the row again column by column through ``read_job``:
each column that can be read is, and each one that cannot takes the nearest value that can (a
time before the readable range becomes ``INSTANT_MIN``, one after it ``INSTANT_MAX``, JSON that
cannot be read its empty value) and is noted on the job as an ``Unreadable`` with its stored
text. The job is then a ``Job`` like any other: it is listed, dumped, rescued, retained and
cancelled as usual, and a claim fails it (``decisions.unreadable_failure``), so one such row
never stops the rest of a batch, a listing or a maintenance round.

A store's decoders (``Decoders``) turn a stored value into the field's value and raise when
they cannot; ``TooEarly`` and ``TooLate`` say which end of the time range a time left by.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from awa.domain import Job, Unreadable
from awa.domain.defaults import DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY
from awa.domain.validation import INSTANT_MAX, INSTANT_MIN

__all__ = [
    "RAW_CHARS_MAX",
    "Decoders",
    "Raw",
    "TooEarly",
    "TooLate",
    "placeholder",
    "raw_text",
    "read_fields",
    "read_job",
    "time_placeholder",
]

#: the most characters of a stored value an ``Unreadable`` quotes
RAW_CHARS_MAX = 200
#: what each column of a job decodes with: the stored value in, the field's value out
Decoders = Mapping[str, Callable[[Any], Any]]


@attrs.frozen
class Raw:
    """A value the database driver could not load, as the server sent it, and why."""

    text: str
    reason: str


class TooEarly(ValueError):
    """A stored time before the earliest one this version reads."""


class TooLate(ValueError):
    """A stored time after the latest one this version reads."""


_TIME_COLUMNS = frozenset(
    {
        "run_at",
        "created_at",
        "attempted_at",
        "heartbeat_at",
        "deadline_at",
        "finalized_at",
        "callback_timeout_at",
        "dlq_at",
    }
)
# the value a column that cannot be read takes: what an empty or new job holds there
_PLACEHOLDERS: dict[str, Any] = {
    "kind": "unreadable",
    "queue": "unreadable",
    "args": {},
    "priority": DEFAULT_PRIORITY,
    "attempt": 0,
    "max_attempts": DEFAULT_MAX_ATTEMPTS,
    "run_lease": 0,
    "tags": (),
    "metadata": {},
    "errors": (),
    "progress": None,
    "callback_id": None,
    "callback_result": None,
    "unique_key": None,
    "unique_states": frozenset(),
    "concurrency_key": None,
    "ordering_key": None,
    # a listing's columns (awa.ports.listing.JobSummary)
    "last_error": None,
    "dlq_reason": "unreadable",
}


def time_placeholder(error: Exception) -> datetime:
    """The nearest end of the readable range for a time that cannot be read (``INSTANT_MIN``
    also for a value that is not a time at all)."""
    return INSTANT_MAX if isinstance(error, TooLate) else INSTANT_MIN


def placeholder(column: str, error: Exception) -> Any:
    """The value ``column`` takes when its stored value cannot be read: for a time the nearest
    end of the readable range (``INSTANT_MIN`` also for a value that is not a time at all), so
    that claim order and due dates keep their sense; otherwise what an empty job holds."""
    if column in _TIME_COLUMNS:
        return time_placeholder(error)
    if column in _PLACEHOLDERS:
        return _PLACEHOLDERS[column]
    raise error  # the id and the state: no job without them, a bug rather than a value


def raw_text(value: object) -> str:
    """A stored value as an ``Unreadable`` quotes it: its text, cut to ``RAW_CHARS_MAX``."""
    if isinstance(value, Raw):
        text = value.text
    elif isinstance(value, str):
        text = value
    else:
        try:
            text = repr(value)
        except Exception:  # an integer too long to print, say
            text = f"a {type(value).__name__}"
    return text if len(text) <= RAW_CHARS_MAX else text[: RAW_CHARS_MAX - 1] + "…"


def _reason(error: Exception) -> str:
    if isinstance(error, TooEarly):
        return f"before {INSTANT_MIN:%Y-%m-%d}, the earliest time awa reads"
    if isinstance(error, TooLate):
        return f"after {INSTANT_MAX:%Y-%m-%d}, the latest time awa reads"
    said = str(error) or type(error).__name__
    return said if len(said) <= 120 else said[:119] + "…"


def read_fields(
    columns: Sequence[str], values: Sequence[Any], decoders: Decoders
) -> tuple[dict[str, Any], tuple[Unreadable, ...]]:
    """The fields ``columns`` hold, read column by column: a column its decoder cannot read
    takes its ``placeholder`` and is returned among the ``Unreadable`` columns."""
    fields: dict[str, Any] = {}
    found: list[Unreadable] = []
    for column, value in zip(columns, values, strict=True):
        try:
            fields[column] = decoders[column](value)
        except Exception as error:  # any way a stored value can fail to become a field
            fields[column] = placeholder(column, error)
            found.append(Unreadable(column, raw_text(value), _reason(error)))
    return fields, tuple(found)


def read_job(
    columns: Sequence[str],
    values: Sequence[Any],
    decoders: Decoders,
    *,
    base: Job | None = None,
) -> Job:
    """The job whose ``columns`` hold ``values``, read by ``read_fields``; the columns it
    could not read are noted in ``Job.unreadable``. ``base`` gives the columns ``columns``
    leaves out (a claimed job, when only the columns an attempt changes were read back)."""
    fields, found = read_fields(columns, values, decoders)
    if base is not None:
        return attrs.evolve(base, unreadable=(*base.unreadable, *found), **fields)
    return Job(**fields, unreadable=found)
