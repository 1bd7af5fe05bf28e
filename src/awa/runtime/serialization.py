"""Job arguments at the edge: one cattrs converter turns dataclasses, attrs classes, pydantic v2
models, ``TypedDict``\\ s and plain dicts into JSON objects and back.

pydantic is optional: its hook recognises a model class only once pydantic is imported, which
it must be for such a class to exist, so awa never imports it itself. A model, at any depth,
is stored only if what is stored validates back to it (``model_args``).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import uuid
from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.v import format_exception

from awa.domain import SerializationError, ValidationError
from awa.domain.validation import check_kind
from awa.runtime.model_args import dump_model, load_model, model_problems

__all__ = ["default_kind", "dump_args", "is_args_object", "is_pydantic_model", "load_args"]

T = TypeVar("T")


def is_pydantic_model(cls: Any) -> bool:
    """Whether ``cls`` is a pydantic (v2) model class, without importing pydantic."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)


_converter = cattrs.Converter()
_converter.register_unstructure_hook(datetime, datetime.isoformat)
_converter.register_structure_hook(datetime, lambda v, _: datetime.fromisoformat(v))
_converter.register_unstructure_hook(date, date.isoformat)
_converter.register_structure_hook(date, lambda v, _: date.fromisoformat(v))
_converter.register_unstructure_hook(uuid.UUID, str)
_converter.register_structure_hook(uuid.UUID, lambda v, _: uuid.UUID(v))
_converter.register_unstructure_hook_func(is_pydantic_model, dump_model)
_converter.register_structure_hook_func(is_pydantic_model, load_model)

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


def is_args_object(args: object) -> bool:
    """A dataclass, attrs or pydantic instance: an args value whose type names its kind."""
    cls = type(args)
    return (
        (dataclasses.is_dataclass(args) and not isinstance(args, type))
        or attrs.has(cls)
        or is_pydantic_model(cls)
    )


def dump_args(args: object) -> dict[str, Any]:
    """A JSON object for ``args``: a dataclass, attrs or pydantic instance, or a mapping
    (a ``TypedDict`` is one) whose values are unstructured the same way."""
    dump = _dumpers.get(type(args))
    if dump is None:
        dump = _dumper(args)
    try:
        data = dump(args)
    except ValidationError:  # a model whose stored form would not give it back: says why
        raise
    except Exception as exc:  # cattrs and pydantic raise many kinds; one line for the user
        raise SerializationError(f"cannot serialize {type(args).__name__}: {exc}") from exc
    if not isinstance(data, dict):
        raise SerializationError(f"{type(args).__name__} does not serialize to a JSON object")
    return data


_DUMPERS_CACHED_MAX = 1024
# an args class's unstructure function, looked up once: a batch of one class asks per job
_dumpers: dict[type, Callable[[Any], Any]] = {}


def _dump_mapping(args: Mapping[str, Any]) -> Any:
    return _converter.unstructure(dict(args))


def _dumper(args: object) -> Callable[[Any], Any]:
    if isinstance(args, Mapping):
        return _dump_mapping
    if not is_args_object(args):
        raise SerializationError(
            "job args must be a dataclass, an attrs class, a pydantic model or a dict, got"
            f" {type(args).__name__}"
        )
    dump: Callable[[Any], Any] = _converter.get_unstructure_hook(type(args))
    if len(_dumpers) < _DUMPERS_CACHED_MAX:
        _dumpers[type(args)] = dump
    return dump


def _problem(exc: BaseException, type_: Any) -> str:
    """One problem of a failed structure, with pydantic's own words for a model's errors."""
    if is_pydantic_model(type_) and callable(getattr(exc, "errors", None)):
        return model_problems(exc)  # type: ignore[arg-type]
    return format_exception(exc, type_)


def load_args(data: Mapping[str, Any], args_type: type[T]) -> T:
    """Rebuild the handler's args; ``SerializationError`` with every problem on one line."""
    if args_type is dict:
        return dict(data)  # type: ignore[return-value]
    try:
        return _converter.structure(data, args_type)
    except Exception as exc:
        if is_pydantic_model(args_type):
            problems = _problem(exc, args_type)
        else:
            problems = "; ".join(cattrs.transform_error(exc, format_exception=_problem))
        raise SerializationError(
            f"args do not fit {args_type.__name__}: {problems or exc}"
        ) from exc
