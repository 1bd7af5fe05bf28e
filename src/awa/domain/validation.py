"""Input rules, checked before anything is written. Each failure is one clear sentence."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from awa.domain.errors import ValidationError

__all__ = [
    "JSON_DEPTH_MAX",
    "MAX_ATTEMPTS_RANGE",
    "PRIORITY_RANGE",
    "TAGS_COUNT_MAX",
    "TAG_LENGTH_MAX",
    "check_aware",
    "check_json_object",
    "check_kind",
    "check_max_attempts",
    "check_priority",
    "check_queue",
    "check_seconds",
    "check_tags",
]

PRIORITY_RANGE = range(1, 5)
MAX_ATTEMPTS_RANGE = range(1, 1001)
TAGS_COUNT_MAX = 32
TAG_LENGTH_MAX = 100
JSON_DEPTH_MAX = 64

_NAME = re.compile(r"[a-z0-9_][a-z0-9_.:-]{0,127}\Z", re.ASCII)
_KIND = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,127}\Z", re.ASCII)


def check_queue(queue: object) -> str:
    if not isinstance(queue, str) or not _NAME.match(queue):
        raise ValidationError(
            f"invalid queue name {queue!r}: use 1-128 lowercase letters, digits, '_', '.', ':'"
            " or '-', not starting with punctuation other than '_'"
        )
    return queue


def check_kind(kind: object) -> str:
    if not isinstance(kind, str) or not _KIND.match(kind):
        raise ValidationError(
            f"invalid job kind {kind!r}: use 1-128 letters, digits, '_', '.', ':' or '-',"
            " starting with a letter or '_'"
        )
    return kind


def _check_int_in(name: str, value: object, allowed: range) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        raise ValidationError(
            f"{name} must be an integer from {allowed.start} to {allowed.stop - 1}, got {value!r}"
        )
    return value


def check_priority(priority: object) -> int:
    return _check_int_in("priority", priority, PRIORITY_RANGE)


def check_max_attempts(max_attempts: object) -> int:
    return _check_int_in("max_attempts", max_attempts, MAX_ATTEMPTS_RANGE)


def check_seconds(name: str, seconds: object, *, allow_zero: bool = True) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise ValidationError(f"{name} must be a number of seconds, got {seconds!r}")
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValidationError(f"{name} must be finite and {bound} seconds, got {seconds!r}")
    return float(seconds)


def check_aware(name: str, when: object) -> datetime:
    if not isinstance(when, datetime) or when.utcoffset() is None:
        raise ValidationError(f"{name} must be a timezone-aware datetime, got {when!r}")
    return when


def check_tags(tags: object) -> tuple[str, ...]:
    if isinstance(tags, (str, bytes)) or not isinstance(tags, Sequence):
        raise ValidationError(f"tags must be a list of strings, got {tags!r}")
    if len(tags) > TAGS_COUNT_MAX:
        raise ValidationError(f"at most {TAGS_COUNT_MAX} tags, got {len(tags)}")
    for tag in tags:
        if not isinstance(tag, str) or not 0 < len(tag) <= TAG_LENGTH_MAX:
            raise ValidationError(
                f"each tag must be a string of 1-{TAG_LENGTH_MAX} characters, got {tag!r}"
            )
        _check_storable_text("tag", tag)
    return tuple(tags)


def check_json_object(name: str, value: object) -> dict[str, Any]:
    """A JSON object that every store can hold verbatim (PostgreSQL's jsonb refuses NUL)."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"{name} must be a JSON object, got {type(value).__name__}")
    _check_json(name, value, 0)
    return dict(value)


def _check_json(path: str, value: object, depth: int) -> None:
    if depth > JSON_DEPTH_MAX:
        raise ValidationError(f"{path} is nested deeper than {JSON_DEPTH_MAX} levels")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{path} holds {value!r}, which JSON cannot represent")
        return
    if isinstance(value, str):
        _check_storable_text(path, value)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"{path} has a non-string key {key!r}")
            _check_storable_text(f"{path} key", key)
            _check_json(f"{path}.{key}", item, depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(f"{path}[{index}]", item, depth + 1)
        return
    raise ValidationError(f"{path} holds a {type(value).__name__}, which is not JSON")


def _check_storable_text(path: str, text: str) -> None:
    """PostgreSQL text and jsonb hold neither NUL nor unpaired UTF-16 surrogates."""
    if "\x00" in text:
        raise ValidationError(f"{path} contains a NUL character, which cannot be stored")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            f"{path} contains an unpaired surrogate, which is not valid Unicode"
        ) from None
