"""Input rules, checked before anything is written. Each failure is one clear sentence."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from awa.domain.defaults import MAX_ATTEMPTS_RANGE, PRIORITY_RANGE
from awa.domain.errors import ValidationError
from awa.domain.states import JobState

__all__ = [
    "ARGS_BYTES_MAX_DEFAULT",
    "DURATION_MAX_S",
    "ID_RANGE",
    "INSTANT_MAX",
    "INSTANT_MIN",
    "JSON_DEPTH_MAX",
    "JSON_INTEGER_DIGITS_MAX",
    "MAX_ATTEMPTS_RANGE",
    "PRIORITY_RANGE",
    "TAGS_COUNT_MAX",
    "TAG_LENGTH_MAX",
    "TEXT_LENGTH_MAX",
    "check_args_size",
    "check_flag",
    "check_id",
    "check_instant",
    "check_json",
    "check_json_object",
    "check_kind",
    "check_max_attempts",
    "check_priority",
    "check_queue",
    "check_seconds",
    "check_state",
    "check_tags",
    "check_text",
    "compact_json",
    "shown",
    "storable_text",
]

TAGS_COUNT_MAX = 32
TAG_LENGTH_MAX = 100
JSON_DEPTH_MAX = 64
#: the longest duration any setting or outcome may ask for (a snooze, a retry delay, a
#: callback timeout, a retention period): 100 years, so ``now + duration`` always fits a
#: ``datetime`` and a PostgreSQL ``timestamptz``
DURATION_MAX_S = 100 * 365.25 * 24 * 3600
#: the largest args a job may carry unless the client is told otherwise (``max_args_bytes``):
#: a queue row is not a blob store; pass a reference (a key, a URL) to large data instead
ARGS_BYTES_MAX_DEFAULT = 1024 * 1024
#: the longest reason or error text a caller may give (a cancel reason, a callback failure);
#: a handler's own exception text is cut to this length instead (``storable_text``)
TEXT_LENGTH_MAX = 10_000
#: the earliest and latest instant a caller may give (a job's ``run_at``, a dead letter's new
#: ``run_at``): every store keeps them, every reader reads them back, and a time zone a CLI or
#: dashboard shows them in cannot push them out of Python's range (year 1 to 9999)
INSTANT_MIN = datetime(1970, 1, 1, tzinfo=timezone.utc)
INSTANT_MAX = datetime(9999, 1, 1, tzinfo=timezone.utc)
#: ids and leases are 64-bit integers in every store (PostgreSQL ``bigint``, SQLite ``INTEGER``)
ID_RANGE = range(-(2**63), 2**63)
#: the most digits of an integer in JSON: Python reads no longer one back from text (its
#: ``int_max_str_digits`` default), so a longer one could be stored and never read again
JSON_INTEGER_DIGITS_MAX = 4300
_JSON_INTEGER_BOUND = 10**JSON_INTEGER_DIGITS_MAX
# integers this small are plainly storable, settled without comparing with the bound above
_SMALL_INTEGER_BOUND = 2**63

_NAME = re.compile(r"[a-z0-9_][a-z0-9_.:-]{0,127}\Z", re.ASCII)
_KIND = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,127}\Z", re.ASCII)


_SHOWN_CHARS_MAX = 80


def shown(value: object) -> str:
    """A refused value as an error message quotes it: its ``repr``, cut short, so a 50 MB
    argument does not become a 50 MB message. Never raises: an integer Python will not turn
    into text (over 4,300 digits) is described by its size, an object whose ``repr`` fails by
    its type."""
    if isinstance(value, int) and not -_JSON_INTEGER_BOUND < value < _JSON_INTEGER_BOUND:
        return f"an integer of about {int(abs(value).bit_length() * 0.30103):,} digits"
    try:
        # a time as it is written (ISO 8601, offset included), not as Python builds one
        text = value.isoformat() if isinstance(value, datetime) else repr(value)
    except Exception:
        return f"a {type(value).__name__}"
    if len(text) > _SHOWN_CHARS_MAX:
        return text[: _SHOWN_CHARS_MAX - 1] + "…"
    return text


def check_queue(queue: object) -> str:
    if not isinstance(queue, str) or not _NAME.match(queue):
        raise ValidationError(
            f"invalid queue name {shown(queue)}: use 1-128 lowercase letters, digits, '_', '.',"
            " ':' or '-', not starting with punctuation other than '_'"
        )
    return queue


def check_kind(kind: object) -> str:
    if not isinstance(kind, str) or not _KIND.match(kind):
        raise ValidationError(
            f"invalid job kind {shown(kind)}: use 1-128 letters, digits, '_', '.', ':' or '-',"
            " starting with a letter or '_'"
        )
    return kind


def _check_int_in(name: str, value: object, allowed: range) -> int:
    if type(value) is int and value in allowed:  # the common case, without two isinstance
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        raise ValidationError(
            f"{name} must be an integer from {allowed.start} to {allowed.stop - 1},"
            f" got {shown(value)}"
        )
    return value


def check_priority(priority: object) -> int:
    return _check_int_in("priority", priority, PRIORITY_RANGE)


def check_max_attempts(max_attempts: object) -> int:
    return _check_int_in("max_attempts", max_attempts, MAX_ATTEMPTS_RANGE)


def check_id(name: str, value: object) -> int:
    """A job id or lease: an integer a 64-bit column holds."""
    if type(value) is int and -_SMALL_INTEGER_BOUND <= value < _SMALL_INTEGER_BOUND:
        return value  # the common case, checked per finished attempt: kept cheap
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} is an integer, got {shown(value)}")
    if value not in ID_RANGE:
        raise ValidationError(f"{name} must be a 64-bit integer, got {shown(value)}")
    return int(value)


def check_seconds(name: str, seconds: object, *, allow_zero: bool = True) -> float:
    """A duration from 0 (or just above, unless ``allow_zero``) to ``DURATION_MAX_S``, to the
    microsecond, the finest time every store keeps: a duration is what it reads back as."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise ValidationError(f"{name} must be a number of seconds, got {shown(seconds)}")
    if (
        (isinstance(seconds, int) and not 0 <= seconds <= DURATION_MAX_S)  # before float()
        or not math.isfinite(seconds)
        or seconds < 0
        or (seconds == 0 and not allow_zero)
        or seconds > DURATION_MAX_S
    ):
        low = ">= 0" if allow_zero else "> 0"
        raise ValidationError(
            f"{name} must be {low} and at most {DURATION_MAX_S:.0f} seconds (100 years),"
            f" got {shown(seconds)}"
        )
    kept = timedelta(seconds=seconds).total_seconds()
    if kept == 0 and not allow_zero:
        raise ValidationError(
            f"{name} must be at least 0.000001 seconds (a microsecond, the finest time a store"
            f" keeps), got {shown(seconds)}"
        )
    return kept


def check_flag(name: str, value: object) -> bool:
    """A yes/no argument must be a real ``bool``: ``all="no"`` is truthy and would act on
    everything."""
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be True or False, got {shown(value)}")
    return value


def check_state(state: object) -> JobState:
    """A job state by value (``"failed"``) or member; the ``JobState``."""
    try:
        return JobState(state)
    except ValueError:
        names = ", ".join(s.value for s in JobState)
        raise ValidationError(f"unknown job state {shown(state)}: use one of {names}") from None


def check_text(name: str, text: object, *, length_max: int = TEXT_LENGTH_MAX) -> str:
    """Non-empty text a store can hold, as a caller gave it (a reason, an error message)."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(f"{name} must be a non-empty string, got {shown(text)}")
    if len(text) > length_max:
        raise ValidationError(f"{name} is {len(text)} characters; at most {length_max}")
    _check_storable_text(name, text)
    return text


def storable_text(text: str, *, length_max: int = TEXT_LENGTH_MAX) -> str:
    """``text`` made storable as it is recorded, for text nobody can be asked to fix (a
    handler's exception message, a file name from ``os.listdir``): NUL and unpaired surrogates
    become visible escapes (``\\x00``, ``\\udcff``), and text beyond ``length_max`` is cut."""
    if len(text) > length_max:
        text = text[: length_max - 1] + "…"
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def check_instant(name: str, when: object) -> datetime:
    """A timezone-aware ``datetime`` from ``INSTANT_MIN`` to ``INSTANT_MAX``, as the same
    instant in UTC: an offset can carry a time inside Python's range out of it once converted
    (``0001-01-01T00:00+14:00``), and no store may keep what no reader can read back."""
    try:
        offset = when.utcoffset() if isinstance(when, datetime) else None
    except Exception:  # a tzinfo of the caller's that fails is their input, not our bug
        offset = None
    if offset is None:
        raise ValidationError(f"{name} must be a timezone-aware datetime, got {shown(when)}")
    assert isinstance(when, datetime)
    try:
        utc = when.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not INSTANT_MIN <= utc <= INSTANT_MAX:
        raise ValidationError(
            f"{name} must be from {INSTANT_MIN:%Y-%m-%d} to {INSTANT_MAX:%Y-%m-%d} UTC,"
            f" got {shown(when)}"
        )
    if type(utc) is not datetime:  # a subclass's arithmetic and loaders are its own
        utc = datetime(*utc.timetuple()[:6], utc.microsecond, tzinfo=timezone.utc)
    return utc


def check_tags(tags: object) -> tuple[str, ...]:
    if not tags and type(tags) is tuple:  # most jobs: none
        return ()
    if isinstance(tags, (str, bytes)) or not isinstance(tags, Sequence):
        raise ValidationError(f"tags must be a list of strings, got {shown(tags)}")
    if len(tags) > TAGS_COUNT_MAX:
        raise ValidationError(f"at most {TAGS_COUNT_MAX} tags, got {len(tags)}")
    for tag in tags:
        if not isinstance(tag, str) or not 0 < len(tag) <= TAG_LENGTH_MAX:
            raise ValidationError(
                f"each tag must be a string of 1-{TAG_LENGTH_MAX} characters, got {shown(tag)}"
            )
        _check_storable_text("tag", tag)
    return tuple(tags)


def check_json_object(name: str, value: object) -> dict[str, Any]:
    """A JSON object that every store can hold verbatim (PostgreSQL's jsonb refuses NUL)."""
    if type(value) is not dict and not isinstance(value, Mapping):
        raise ValidationError(f"{name} must be a JSON object, got {type(value).__name__}")
    _check_json(name, value, 0)
    return dict(value)


def check_json(name: str, value: object) -> Any:
    """Any JSON value every store can hold verbatim (a callback's payload)."""
    _check_json(name, value, 0)
    return value


_PLAIN_SCALARS = frozenset({type(None), bool})


def _plainly_fine(item: object) -> bool:
    """A value of an exact built-in scalar type that is plainly storable JSON: the common
    case, settled without the general walk (whose answer for it is the same)."""
    if type(item) is str:
        return item.isascii() and "\x00" not in item
    if type(item) is float:
        return math.isfinite(item)
    if type(item) is int:
        return -_SMALL_INTEGER_BOUND < item < _SMALL_INTEGER_BOUND
    return type(item) in _PLAIN_SCALARS


def _check_json(path: str, value: object, depth: int) -> None:
    if depth > JSON_DEPTH_MAX:
        raise ValidationError(f"{_short(path)} is nested deeper than {JSON_DEPTH_MAX} levels")
    if type(value) is dict and depth < JSON_DEPTH_MAX:  # args are mostly a flat dict
        for key, item in value.items():
            if not (type(key) is str and key.isascii() and "\x00" not in key):
                _check_key(path, key)
            if not _plainly_fine(item):
                _check_json(_member(path, key), item, depth + 1)
        return
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if not -_JSON_INTEGER_BOUND < value < _JSON_INTEGER_BOUND:
            raise ValidationError(
                f"{path} holds {shown(value)}: a JSON integer has at most"
                f" {JSON_INTEGER_DIGITS_MAX:,} digits"
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{path} holds {shown(value)}, which JSON cannot represent")
        return
    if isinstance(value, str):
        _check_storable_text(path, value)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_key(path, key)
            _check_json(_member(path, key), item, depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(f"{path}[{index}]", item, depth + 1)
        return
    raise ValidationError(f"{path} holds a {type(value).__name__}, which is not JSON")


def _short(path: str, length_max: int = 200) -> str:
    """A path past ``JSON_DEPTH_MAX`` levels, its middle elided: its start and its end."""
    if len(path) <= length_max:
        return path
    return f"{path[: length_max // 2]}...{path[-(length_max // 2 - 3) :]}"


def _member(path: str, key: str) -> str:
    """The path of ``key`` in ``path``, as a refusal names it on one line: ``args.name``, or
    ``args['a\\nb']`` for a key a message could not show as it is."""
    if key.isascii() and key.isprintable() and key and not any(c in key for c in "'\".[]"):
        return f"{path}.{key}"
    return f"{path}[{shown(key)}]"


def _check_key(path: str, key: object) -> None:
    if not isinstance(key, str):
        raise ValidationError(f"{path} has a non-string key {shown(key)}")
    _check_storable_text(f"{path} key", key)


def _check_storable_text(path: str, text: str) -> None:
    """PostgreSQL text and jsonb hold neither NUL nor unpaired UTF-16 surrogates."""
    if "\x00" in text:
        raise ValidationError(f"{path} contains a NUL character, which cannot be stored")
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            f"{path} contains an unpaired surrogate, which is not valid Unicode"
        ) from None


# made once: json.dumps with options builds an encoder per call, half the cost of a small dump
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _c_encoder() -> Any:
    """The C encoder ``_COMPACT.encode`` makes anew for every value (about 40% of a small
    dump), made once; ``None`` where the interpreter has none. Without the circular check:
    a value already checked as JSON is no deeper than ``JSON_DEPTH_MAX``, so holds no cycle."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    return make(
        None, _COMPACT.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )


_C_COMPACT = _c_encoder()


def compact_json(value: Any) -> str:
    """``value`` (already checked as JSON) as JSON text without spaces, as stores keep it."""
    if _C_COMPACT is None or type(value) is not dict:
        return _COMPACT.encode(value)
    return "".join(_C_COMPACT(value, 0))


def check_args_size(args: Mapping[str, Any] | str, bytes_max: int | None) -> None:
    """Args (already checked as JSON), or their ``compact_json`` text, no larger than
    ``bytes_max`` bytes of JSON in UTF-8; ``None`` sets no limit."""
    if bytes_max is None:
        return
    text = args if isinstance(args, str) else compact_json(args)
    size = len(text.encode())
    if size > bytes_max:
        raise ValidationError(
            f"args are {size:,} bytes of JSON; the limit is {bytes_max:,} (max_args_bytes):"
            " store large data elsewhere and pass a reference"
        )
