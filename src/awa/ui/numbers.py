"""The numbers a request carries (a job id in its path, a page's cursor or size in its query, a
job id in a form), read in this one place.

A number is ASCII digits, at most ``DIGITS_MAX`` of them, from 1 to ``JOB_ID_MAX``; anything
else is a ``ValidationError`` (a 400 page). The length is checked before ``int()``, which
refuses a literal longer than ``sys.get_int_max_str_digits()`` (4,300 digits) with a
``ValueError`` of its own that would otherwise end as a 500, and which takes time quadratic in
the length below that.
"""

from __future__ import annotations

from awa.domain import ValidationError

__all__ = ["DIGITS_MAX", "JOB_ID_MAX", "job_id", "whole_number"]

#: the largest job id a store can hold (a bigint); every number a request carries is below it
JOB_ID_MAX = 2**63 - 1
DIGITS_MAX = len(str(JOB_ID_MAX))
_QUOTED_CHARS_MAX = 40


def whole_number(name: str, text: str | None) -> int | None:
    """``text`` as a whole number from 1 to ``JOB_ID_MAX``; ``None`` when empty or absent."""
    if text is None or text == "":
        return None
    if (
        len(text) > DIGITS_MAX
        or not (text.isascii() and text.isdigit())
        or not 0 < int(text) <= JOB_ID_MAX
    ):
        shown = text if len(text) <= _QUOTED_CHARS_MAX else text[: _QUOTED_CHARS_MAX - 1] + "…"
        raise ValidationError(
            f"{name} must be a whole number from 1 to {JOB_ID_MAX}, got {shown!r}"
        )
    return int(text)


def job_id(text: str | None) -> int:
    """A job id a path or a form names; one is required."""
    found = whole_number("a job id", text)
    if found is None:
        raise ValidationError("a job id is required")
    return found
