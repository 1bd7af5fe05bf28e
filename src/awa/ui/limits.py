"""A queue's flow limits: their form (``GET /queues/{name}/limits``) and the change (``POST``),
the store's ``configure_queue`` as ``awa queue config`` calls it.

==============================  =========================  ==================================
field                           ``configure_queue``        the CLI
==============================  =========================  ==================================
``concurrency_limit``           ``concurrency_limit``      ``--concurrency-limit N|none``
``rate_per_second``,            ``rate_limit``             ``--rate-limit PER_SECOND,BURST``
``rate_burst``
``key_concurrency_limit``       ``key_concurrency_limit``  ``--key-concurrency-limit N|none``
``key_rate_per_second``,        ``key_rate_limit``         ``--key-rate-limit PER_SECOND,BURST``
``key_rate_burst``
==============================  =========================  ==================================

A field left blank keeps its limit (``UNCHANGED``), ``none`` removes it. The form reads only
the shape of each value (a whole number, a number); the ranges are the store's to check, so a
0, a negative number, NaN or a burst below 1 is refused in the store's own words. Every field
is read before the store is called, and the store checks every limit before it writes one: a
refusal (a 400) changes nothing. As the other actions: the form is the confirmation page, the
``POST`` is CSRF-checked, and a read-only dashboard answers both with a 403.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import Response

from awa.domain import AwaError, ValidationError
from awa.domain.validation import check_queue
from awa.operations.wording import flow_limits_text
from awa.ports.unchanged import UNCHANGED, Unchanged
from awa.ui import views
from awa.ui.actions import Actions
from awa.ui.pages import Pages
from awa.ui.web import Web

__all__ = ["LimitsChange", "QueueLimits"]

#: longer than any number a limit can be written as; longer text is not read at all
_NUMBER_CHARS_MAX = 40
_QUOTED_CHARS_MAX = 40

Limit = int | Unchanged | None
Rate = tuple[float, int] | Unchanged | None


def _quoted(text: str) -> str:
    cut = text if len(text) <= _QUOTED_CHARS_MAX else text[: _QUOTED_CHARS_MAX - 1] + "…"
    return repr(cut)


def _is_whole(text: str) -> bool:
    digits = text[1:] if text.startswith("-") else text
    return len(text) <= _NUMBER_CHARS_MAX and digits.isascii() and digits.isdigit()


def _whole(name: str, text: str) -> int:
    if not _is_whole(text):
        raise ValidationError(f"{name} must be a whole number, got {_quoted(text)}")
    return int(text)


def _number(name: str, text: str) -> float:
    # float() reads "nan" and "inf" too: the store refuses them with its range
    try:
        if len(text) <= _NUMBER_CHARS_MAX and text.isascii():
            return float(text)
    except ValueError:
        pass
    raise ValidationError(f"{name} must be a number, got {_quoted(text)}")


def limit_value(name: str, text: str) -> Limit:
    """A concurrency limit as its field gives it: blank keeps it, ``none`` removes it."""
    written = text.strip()
    if not written:
        return UNCHANGED
    if written.lower() == "none":
        return None
    if not _is_whole(written):
        raise ValidationError(
            f"{name} must be a whole number, or none to remove it, got {_quoted(written)}"
        )
    return int(written)


def rate_value(name: str, per_second_text: str, burst_text: str) -> Rate:
    """A rate limit as its two fields give it: both blank keep it, ``none`` as the rate
    removes it, else a rate and its burst."""
    per_second, burst = per_second_text.strip(), burst_text.strip()
    if not per_second and not burst:
        return UNCHANGED
    if per_second.lower() == "none":
        if burst:
            raise ValidationError(
                f"{name}: leave the burst blank to remove the limit, got burst {_quoted(burst)}"
            )
        return None
    if not per_second:
        raise ValidationError(
            f"{name} needs its rate per second beside the burst (none removes the limit)"
        )
    if not burst:
        raise ValidationError(
            f"{name} needs its burst beside the rate: the most attempts that start at once"
        )
    return _number(f"{name} per_second", per_second), _whole(f"{name} burst", burst)


@attrs.frozen
class LimitsChange:
    """The four limits a form gives, each ``UNCHANGED`` when left blank."""

    concurrency_limit: Limit = UNCHANGED
    rate_limit: Rate = UNCHANGED
    key_concurrency_limit: Limit = UNCHANGED
    key_rate_limit: Rate = UNCHANGED

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> LimitsChange:
        """Every field read, or the first one that is not a value, refused."""

        def field(name: str) -> str:
            return fields.get(name, "")

        change = cls(
            concurrency_limit=limit_value("concurrency_limit", field("concurrency_limit")),
            rate_limit=rate_value("rate_limit", field("rate_per_second"), field("rate_burst")),
            key_concurrency_limit=limit_value(
                "key_concurrency_limit", field("key_concurrency_limit")
            ),
            key_rate_limit=rate_value(
                "key_rate_limit", field("key_rate_per_second"), field("key_rate_burst")
            ),
        )
        if all(value is UNCHANGED for value in attrs.astuple(change, recurse=False)):
            raise ValidationError(
                "nothing to set: fill in a limit (a blank field keeps its limit, none removes it)"
            )
        return change

    def keywords(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=False)


class QueueLimits:
    def __init__(self, web: Web, actions: Actions, pages: Pages) -> None:
        self.web = web
        self.actions = actions
        self.pages = pages

    async def edit(self, request: Request) -> Response:
        queue: str = request.path_params["queue"]
        if request.method == "GET":
            return await self._form(request, queue)

        async def act(fields: dict[str, str]) -> tuple[str, list[tuple[str, str]]]:
            check_queue(queue)
            change = LimitsChange.of(fields)
            settings = await self.web.call(
                self.web.store.configure_queue, queue, **change.keywords()
            )
            links = [
                ("the queues", self.web.path(request, "queues")),
                (f"the limits of {queue}", self.web.path(request, "queue_limits", queue=queue)),
            ]
            return f"queue {queue}: {flow_limits_text(settings)}", links

        return await self.actions.perform(request, act)

    async def _form(self, request: Request, queue: str) -> Response:
        """The form, with each limit as the queue counts have it now (no count of its own:
        the summary the queues page reads, or ``queue_stats`` without one)."""
        if self.web.read_only:
            return self.web.read_only_refusal(request)
        try:
            check_queue(queue)
            _, stats = await self.pages.counts()
        except AwaError as exc:
            return self.web.failure(request, exc)
        found = next((s for s in stats if s.queue == queue), None)
        return self.web.render(request, "limits.html", queue=queue, current=views.limits_now(found))
