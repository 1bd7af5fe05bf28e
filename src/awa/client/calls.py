"""How a client calls the store: the async client in a thread, so that the event loop never
waits on the database; the sync client on the caller's thread.

A verb that only passes its arguments on is made from the method it calls (``forward_async``,
and ``forward`` in the generated sync verbs), and the producer verbs from the function that
takes their keywords (``produces_async``, ``produces``, over ``producing.py``): a verb's
keywords and defaults are written once, there; mypy, an IDE and ``help()`` see them on the
client's verb (``ParamSpec``, ``__wrapped__``, ``__signature__``).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, Literal, ParamSpec, Protocol, TypeVar

from awa.client.producing import Batch
from awa.client.store_access import StoreAccess
from awa.domain import Job
from awa.ports import ClaimStore

__all__ = [
    "AsyncCalls",
    "forward",
    "forward_async",
    "produces",
    "produces_async",
    "takes_parameters_of",
]

P = ParamSpec("P")
R = TypeVar("R")
#: what a forwarded verb calls: the port's verb on the store, or a call of ``StoreAccess``
Via = Literal["store", "_ops"]


class AsyncCalls:
    async def _call(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)


class _Calls(Protocol):
    store: ClaimStore
    _ops: StoreAccess


class _Produces(Protocol):
    def _insert_batch(self, batch: Batch[Any], /) -> list[Job] | list[int]: ...


class _ProducesAsync(Protocol):
    async def _insert_batch(self, batch: Batch[Any], /) -> list[Job] | list[int]: ...


def forward_async(
    verb: Callable[Concatenate[Any, P], R], *, via: Via = "store", doc: str | None = None
) -> Callable[Concatenate[_Calls, P], Coroutine[Any, Any, R]]:
    """The async verb that runs ``verb`` (a method of the port, or of ``StoreAccess`` with
    ``via="_ops"``) on the client's own, in a thread."""
    name = verb.__name__

    async def forwarded(self: _Calls, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(getattr(getattr(self, via), name), *args, **kwargs)

    return _like(forwarded, verb, doc)


def forward(
    verb: Callable[Concatenate[Any, P], R], *, via: Via = "store", doc: str | None = None
) -> Callable[Concatenate[_Calls, P], R]:
    """The sync verb that calls ``verb`` on the client's own, on the caller's thread."""
    name = verb.__name__

    def forwarded(self: _Calls, /, *args: P.args, **kwargs: P.kwargs) -> R:
        answer: R = getattr(getattr(self, via), name)(*args, **kwargs)
        return answer

    return _like(forwarded, verb, doc)


def produces_async(
    *, doc: str
) -> Callable[
    [Callable[P, Batch[R]]], Callable[Concatenate[_ProducesAsync, P], Coroutine[Any, Any, R]]
]:
    """``produces_async(doc=...)(request)``: the async producer verb that takes ``request``'s
    arguments and inserts the batch it makes. (Given alone, ``request`` keeps its overloads
    in mypy's eyes: ``insert_many``'s ``returning``.)"""

    def make(
        request: Callable[P, Batch[R]],
    ) -> Callable[Concatenate[_ProducesAsync, P], Coroutine[Any, Any, R]]:
        async def produce(self: _ProducesAsync, /, *args: P.args, **kwargs: P.kwargs) -> R:
            batch = request(*args, **kwargs)
            return batch.answer(await self._insert_batch(batch))

        return _like(produce, request, doc, with_self=True)

    return make


def produces(
    *, doc: str
) -> Callable[[Callable[P, Batch[R]]], Callable[Concatenate[_Produces, P], R]]:
    """``produces(doc=...)(request)``: the sync producer verb, as ``produces_async``."""

    def make(request: Callable[P, Batch[R]]) -> Callable[Concatenate[_Produces, P], R]:
        def produce(self: _Produces, /, *args: P.args, **kwargs: P.kwargs) -> R:
            batch = request(*args, **kwargs)
            return batch.answer(self._insert_batch(batch))

        return _like(produce, request, doc, with_self=True)

    return make


S = TypeVar("S")


def takes_parameters_of(
    source: Callable[Concatenate[Any, P], None],
) -> Callable[[Callable[Concatenate[S, ...], None]], Callable[Concatenate[S, P], None]]:
    """A method (an ``__init__``) that hands what it is given to ``source``, with
    ``source``'s parameters in the eyes of mypy, an IDE and ``help()``."""

    def make(method: Callable[Concatenate[S, ...], None]) -> Callable[Concatenate[S, P], None]:
        return _like(method, source, method.__doc__)

    return make


F = TypeVar("F", bound=Callable[..., Any])


def _like(verb: F, source: Callable[..., Any], doc: str | None, *, with_self: bool = False) -> F:
    """``verb`` named as ``source`` and shown by ``help()`` and ``inspect.signature`` with its
    parameters (behind a ``self`` when ``source`` is a plain function)."""
    functools.update_wrapper(verb, source, assigned=("__name__",), updated=())
    verb.__qualname__ = source.__name__
    verb.__doc__ = doc
    if with_self:
        shown = inspect.signature(source)
        receiver = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        parameters = [receiver, *shown.parameters.values()]
        verb.__dict__["__signature__"] = shown.replace(
            parameters=parameters, return_annotation=inspect.Signature.empty
        )
    return verb
