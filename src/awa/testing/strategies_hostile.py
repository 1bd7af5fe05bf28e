"""Hypothesis strategies for hostile values of every input a caller gives awa: extremes, time
zones, NaN and infinities, NUL, lone surrogates, control and format characters, deep nesting,
``-0.0``, integers of thousands of digits, values of the wrong type. The contract's law
(``awa.testing.contract.hostile``) drives every store and insert path with them: each value is
refused with nothing written, or stored and read back equal.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import strategies as st

from awa.domain.validation import DURATION_MAX_S, INSTANT_MAX, INSTANT_MIN, JSON_INTEGER_DIGITS_MAX
from awa.testing.strategies import json_objects

__all__ = [
    "JOB_FIELDS",
    "hostile_instants",
    "hostile_job_fields",
    "hostile_json",
    "hostile_names",
    "hostile_numbers",
    "hostile_seconds",
    "hostile_tags",
    "hostile_text",
    "json_equal",
]


def _nines(digits: int) -> int:
    return int(10**digits) - 1


def _power_of_ten(digits: int) -> int:
    return int(10**digits)


def _negated(number: int) -> int:
    return -number


# integers of thousands of digits, made by named functions: Hypothesis shows a strategy by its
# values, and Python will not print an integer of over 4,300 digits
_widest = st.sampled_from([JSON_INTEGER_DIGITS_MAX - 1, JSON_INTEGER_DIGITS_MAX])
_huge_integers = st.one_of(
    _widest.map(_nines),
    _widest.map(_power_of_ten),
    st.just(5000).map(_power_of_ten),
)
#: characters a terminal, a log or a database treats specially
_SPECIAL = [
    "\x00", "\x1b", "\x7f", "\x9b", "\n", "\r", "\t", "\u202e", "\u2066", "\u2069", "\u200b",
    "\ufeff", "\u2028", "\ud800", "\udfff", "\U0010ffff", "'", '"', "\\", "%s", "$1", "é",
]  # fmt: skip

#: any text, lone surrogates and NUL included
hostile_text = st.one_of(
    st.text(max_size=20),
    st.lists(st.sampled_from(_SPECIAL), max_size=6).map("".join),
    st.text(st.characters(codec="utf-8"), max_size=20),
    st.just("x" * 300),
)

#: numbers at and past every bound, and values that only look like numbers
hostile_numbers = st.one_of(
    st.integers(-5, 5),
    st.integers(),
    st.sampled_from([2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64]),
    _huge_integers,
    _huge_integers.map(_negated),
    st.floats(),
    st.sampled_from([-0.0, 5e-324, 1e16, 1e308, 1.7976931348623157e308, math.nan, math.inf]),
    st.booleans(),
)

hostile_seconds = st.one_of(
    hostile_numbers,
    st.sampled_from([0, 0.0, 1e-9, DURATION_MAX_S, DURATION_MAX_S + 1]),
    st.none(),
    st.text(max_size=4),
)

#: names as given to kind, queue and the like: valid ones and everything near them
hostile_names = st.one_of(
    st.from_regex(r"[a-z_][a-z0-9_.:-]{0,20}", fullmatch=True),
    hostile_text,
    st.just("x" * 129),
    st.integers(),
    st.none(),
)

_ZONES = [
    timezone.utc,
    timezone(timedelta(hours=14)),
    timezone(timedelta(hours=-14)),
    timezone(timedelta(hours=5, minutes=45)),
    ZoneInfo("Europe/Paris"),
    ZoneInfo("America/New_York"),
    ZoneInfo("Pacific/Kiritimati"),
]


@st.composite
def hostile_instants(draw: st.DrawFn) -> Any:
    """Datetimes across Python's whole range in zones ±14 h (some leave the range once in
    UTC), folds of a DST change, the bounds themselves, naive ones, and non-datetimes."""
    choice = draw(st.sampled_from((0, 0, 1, 2, 3, 4, 5, 6, 6, 6)))  # the ends twice as often
    if choice == 0:
        return draw(st.sampled_from([INSTANT_MIN, INSTANT_MAX])) + timedelta(
            microseconds=draw(st.integers(-1, 1))
        )
    if choice == 6:  # Python's own ends, read in a zone ±14 h: out of range once in UTC
        end = draw(st.sampled_from([datetime.min, datetime.max]))
        return end.replace(tzinfo=draw(st.sampled_from(_ZONES[:3])))
    if choice == 1:
        return draw(st.datetimes()).replace(tzinfo=draw(st.sampled_from(_ZONES)))
    if choice == 2:  # the same wall time twice: 02:30 on 2030-10-27 in Paris, fold 0 and 1
        return datetime(2030, 10, 27, 2, 30, fold=draw(st.integers(0, 1)), tzinfo=_ZONES[4])
    if choice == 3:
        return draw(st.datetimes())  # naive
    if choice == 4:
        return draw(st.sampled_from(["2030-01-01T00:00:00Z", 1_900_000_000, None]))
    delta = timedelta(seconds=draw(st.integers(-(10**9), 10**9)))
    return (datetime(2030, 1, 1, tzinfo=timezone.utc) + delta).astimezone(
        draw(st.sampled_from(_ZONES))
    )


_json_leaves = st.one_of(st.none(), hostile_numbers, hostile_text)


def hostile_json(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """JSON-ish values: hostile leaves, lists, tuples and dicts of them (keys hostile too),
    nesting past the depth bound, and values JSON has no form for."""
    nested = st.recursive(
        _json_leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(hostile_text, inner, max_size=3),
        ),
        max_leaves=max_leaves,
    )
    deep = st.integers(60, 70).map(_nested)
    odd = st.sampled_from([{1: "int key"}, {"set": {1, 2}}, {"bytes": b"\x00"}, [object()]])
    return st.one_of(nested, deep, odd)


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"d": value}
    return value


def hostile_tags() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(hostile_text, max_size=4),
        st.lists(hostile_text, max_size=4).map(tuple),
        st.just(["t"] * 33),
        hostile_text,
        st.none(),
    )


def _canonical(value: Any) -> Any:
    """``value`` as JSON holds it, each scalar tagged with its type: ``True`` is not ``1``,
    a tuple is a list, and zero is zero whatever its sign (PostgreSQL's ``numeric`` keeps
    none)."""
    if isinstance(value, bool) or value is None:
        return ("const", value)
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return ("float", 0.0 if value == 0 else value)
    if isinstance(value, str):
        return ("str", str(value))
    if isinstance(value, (list, tuple)):
        return ("list", [_canonical(item) for item in value])
    return ("dict", {str(key): _canonical(item) for key, item in dict(value).items()})


def json_equal(stored: Any, given: Any) -> bool:
    """Whether ``stored`` is ``given`` read back: the same JSON, type by type."""
    return bool(_canonical(stored) == _canonical(given))


_hostile_objects = st.one_of(
    st.dictionaries(hostile_text, hostile_json(), max_size=4), hostile_json()
)

#: each field of a job: its valid values, and its hostile ones
JOB_FIELDS: dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]] = {
    "kind": (st.just("hostile"), hostile_names),
    "args": (json_objects(6), _hostile_objects),
    "queue": (st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True), hostile_names),
    "priority": (st.integers(1, 4), hostile_numbers),
    "max_attempts": (st.integers(1, 1000), hostile_numbers),
    "run_at": (st.none(), hostile_instants()),
    "tags": (st.lists(st.text(min_size=1, max_size=8), max_size=3), hostile_tags()),
    "metadata": (json_objects(4), _hostile_objects),
}


def hostile_job_fields(hostile: str) -> st.SearchStrategy[dict[str, Any]]:
    """The fields of a job: ``hostile`` drawn from its hostile values, every other one valid,
    so that each hostile value meets the store on its own rather than behind another
    field's refusal."""
    return st.fixed_dictionaries(
        {
            name: hostile_values if name == hostile else valid
            for name, (valid, hostile_values) in JOB_FIELDS.items()
        }
    )
