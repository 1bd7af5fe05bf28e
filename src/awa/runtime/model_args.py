"""pydantic v2 models as job args: stored as the JSON they validate back from, and refused at
insert when that JSON would not give the handler the model the producer held.

The model's JSON is made by field name and read back by field name (and by alias where the model
allows it, for args a producer wrote as a dict), whatever its ``alias``, ``validation_alias``,
``serialization_alias`` or ``populate_by_name`` say: one key for each field, the same on the
way in and out. It is read back as JSON (``model_validate_json``), as pydantic reads what it
wrote, so a strict model's datetimes, UUIDs, Decimals and enums come back from their strings.

The law at insert: the stored JSON, validated back, equals the model given. A masked secret, a
``field_serializer`` that drops information, an excluded field or private attribute holding
something, a float JSON cannot hold: each breaks it, and the insert raises ``ValidationError``
naming the fields, rather than a handler receiving something else later.

pydantic is imported only by code that holds a model, so awa never imports it itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from awa.domain import ValidationError
from awa.domain.validation import compact_json

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic import ValidationError as ModelValidationError

__all__ = ["dump_model", "load_model", "model_problems"]


def dump_model(model: BaseModel) -> Any:
    """The JSON form of ``model`` as stored, once it is known to validate back to ``model``."""
    cls = type(model)
    text = model.model_dump_json(by_alias=False, round_trip=True)
    try:
        restored = cls.model_validate_json(text, by_name=True)
    except _pydantic().ValidationError as exc:  # looked up only when raised
        raise ValidationError(
            f"cannot store {cls.__name__} as job args: its JSON does not validate back"
            f" ({model_problems(exc)}), so every job of it would fail"
        ) from None
    if restored != model:
        raise ValidationError(f"cannot store {cls.__name__} as job args: {_lost(model, restored)}")
    return _SCAN_JSON(text, 0)[0]


# the C scanner ``json.loads`` ends in, called directly: pydantic's JSON has no whitespace
# around it to skip, and the skipping is half the cost of reading a small model's JSON back
_SCAN_JSON: Callable[[str, int], tuple[Any, int]]
_SCAN_JSON = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _pydantic() -> ModuleType:
    return sys.modules["pydantic"]  # imported: a model exists


def load_model(data: Any, cls: type[BaseModel]) -> BaseModel:
    """The handler's model from stored args, read as the JSON they were stored as."""
    return cls.model_validate_json(compact_json(data), by_name=True)


def model_problems(exc: ModelValidationError) -> str:
    """pydantic's errors on one line: ``path: message; ...``, without the input's values."""
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or '$'}: {error['msg']}"
        for error in exc.errors()
    )


def _lost(given: BaseModel, restored: BaseModel) -> str:
    """Why the stored JSON gives back another model, by field path, never with a value."""
    secrets: list[str] = []
    others: list[str] = []
    for path, value in _differences(given, restored, ""):
        (secrets if _holds_secret(value) else others).append(path)
    reasons = []
    if secrets:
        reasons.append(
            f"{', '.join(secrets)} {_holds(secrets)} a secret, stored masked, so the handler would"
            " get '**********'; awa does not unmask it, since a job row is read by anyone who can"
            " read the jobs table, its dumps or the dashboard: pass a reference to the secret"
            " (its name in your secret store) and read the secret in the handler"
        )
    if others or not secrets:
        named = ", ".join(others) if others else "the model"
        reasons.append(
            f"{named} would reach the handler changed: the stored JSON loses information (a"
            " field_serializer, an excluded field or private attribute, a subclass where its base"
            " class is declared, a value JSON cannot hold)"
        )
    return "; ".join(reasons)


def _holds(paths: list[str]) -> str:
    return "holds" if len(paths) == 1 else "hold"


def _differences(given: Any, restored: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """``(path, given value)`` of each leaf where ``restored`` differs: into models of the
    same class, and into lists and tuples of the same length, field by field."""
    from pydantic import BaseModel

    if isinstance(given, BaseModel) and type(restored) is type(given):
        names = [
            *type(given).model_fields,
            *(given.__pydantic_extra__ or {}),
            *(given.__pydantic_private__ or {}),
        ]
        for name in dict.fromkeys(names):
            yield from _differences(
                getattr(given, name, None), getattr(restored, name, None), f"{prefix}{name}."
            )
    elif (
        isinstance(given, (list, tuple))
        and type(restored) is type(given)
        and len(restored) == len(given)
    ):
        for index, (item, back) in enumerate(zip(given, restored, strict=True)):
            yield from _differences(item, back, f"{prefix}{index}.")
    elif given != restored:
        yield prefix.rstrip(".") or "$", given


def _holds_secret(value: Any) -> bool:
    from pydantic import Secret, SecretBytes, SecretStr

    if isinstance(value, (Secret, SecretBytes, SecretStr)):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_secret(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_secret(item) for item in value.values())
    return False
