"""Job arguments at the edge: dataclasses and attrs classes to JSON objects and back (cattrs)."""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, TypeVar

import attrs
import cattrs

from awa.domain import SerializationError
from awa.domain.validation import check_kind

__all__ = ["default_kind", "dump_args", "load_args"]

T = TypeVar("T")

_converter = cattrs.Converter()
_converter.register_unstructure_hook(datetime, datetime.isoformat)
_converter.register_structure_hook(datetime, lambda v, _: datetime.fromisoformat(v))
_converter.register_unstructure_hook(date, date.isoformat)
_converter.register_structure_hook(date, lambda v, _: date.fromisoformat(v))
_converter.register_unstructure_hook(uuid.UUID, str)
_converter.register_structure_hook(uuid.UUID, lambda v, _: uuid.UUID(v))

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


_KINDS_CACHED_MAX = 1024
_kinds: dict[type, str] = {}


def default_kind(args_type: type) -> str:
    """``SendEmail`` -> ``send_email``, the kind a task gets unless it names one."""
    kind = _kinds.get(args_type)
    if kind is None:
        kind = check_kind(_CAMEL_BOUNDARY.sub("_", args_type.__name__).lower())
        if len(_kinds) < _KINDS_CACHED_MAX:  # inserts of unregistered args ask once a job
            _kinds[args_type] = kind
    return kind


def _is_structured(value: object) -> bool:
    return (dataclasses.is_dataclass(value) and not isinstance(value, type)) or attrs.has(
        type(value)
    )


def dump_args(args: object) -> dict[str, Any]:
    """A JSON object for ``args``: a dataclass or attrs instance, or a mapping as it is."""
    if isinstance(args, Mapping):
        return dict(args)
    if not _is_structured(args):
        raise SerializationError(
            f"job args must be a dataclass, an attrs class or a dict, got {type(args).__name__}"
        )
    try:
        data = _converter.unstructure(args)
    except Exception as exc:  # cattrs raises many kinds; one line for the user
        raise SerializationError(f"cannot serialize {type(args).__name__}: {exc}") from exc
    if not isinstance(data, dict):
        raise SerializationError(f"{type(args).__name__} does not serialize to a JSON object")
    return data


def load_args(data: Mapping[str, Any], args_type: type[T]) -> T:
    """Rebuild the handler's args; ``SerializationError`` with every problem on one line."""
    if args_type is dict:
        return dict(data)  # type: ignore[return-value]
    try:
        return _converter.structure(data, args_type)
    except Exception as exc:
        problems = "; ".join(cattrs.transform_error(exc)) if isinstance(exc, Exception) else ""
        raise SerializationError(
            f"args do not fit {args_type.__name__}: {problems or exc}"
        ) from exc
