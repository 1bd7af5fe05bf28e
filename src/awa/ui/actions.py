"""The dashboard's actions: each a confirmation page (``GET``) and the action itself (``POST``),
each the same store verb, with the same words, as the ``awa`` command that does it.

==============================  =========================  ==================================
path                            store verb                 the CLI
==============================  =========================  ==================================
``/jobs/{id}/cancel``           ``cancel``                 ``awa job cancel ID``
``/jobs/{id}/retry``            ``retry``                  ``awa job retry ID``
``/queues/{name}/pause``        ``pause_queue``            ``awa queue pause NAME``
``/queues/{name}/resume``       ``resume_queue``           ``awa queue resume NAME``
``/dlq/retry`` (``id``)         ``retry_from_dlq``         ``awa dlq retry ID``
``/dlq/retry`` (filter)         ``bulk_retry_from_dlq``    ``awa dlq retry-bulk``
``/dlq/purge`` (filter)         ``purge_dlq``              ``awa dlq purge``
``/queues/count``               ``summarize_queues``       (the maintenance leader's count)
==============================  =========================  ==================================

The periodic schedules' actions (``/periodic/{name}/...``) are in ``awa.ui.periodic``, a
queue's flow limits (``/queues/{name}/limits``, ``awa queue config``) in ``awa.ui.limits``.

A bulk action needs a queue, a kind, or ``all`` (the CLI's ``--all``). In a read-only
dashboard every one of them answers 403 and changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from awa.domain import AwaError, Job
from awa.domain.validation import check_queue
from awa.operations.verbs import (
    cancel_job,
    count_dead_letters,
    not_dead_lettered,
    retry_dead_letter,
)
from awa.operations.wording import filter_text, job_result, purged_text, retried_text, switched
from awa.ports import SummarizesQueues
from awa.ports.checks import refuse_unfiltered
from awa.ui import numbers
from awa.ui.web import Web

__all__ = ["Actions", "Confirmation"]

log = logging.getLogger("awa.ui")


@attrs.frozen
class Confirmation:
    """What a confirmation page asks before an action."""

    title: str
    question: str
    detail: str
    action: str  # the route the form posts to
    params: dict[str, Any] = attrs.field(factory=dict)
    fields: dict[str, str] = attrs.field(factory=dict)
    button: str = "Confirm"
    danger: bool = False
    back: str = "queues"
    back_params: dict[str, Any] = attrs.field(factory=dict)
    back_query: dict[str, Any] = attrs.field(factory=dict)


def _bulk_filter(fields: dict[str, str] | Any) -> tuple[str | None, str | None, bool]:
    queue = (fields.get("queue") or "").strip() or None
    kind = (fields.get("kind") or "").strip() or None
    every = fields.get("all") in ("1", "yes", "on", "true")
    return queue, kind, every


def _require_filter(queue: str | None, kind: str | None, every: bool, verb: str) -> None:
    how = "give a queue and/or a kind, or choose every queue and kind"
    refuse_unfiltered(queue, kind, every, verb=verb, what="dead-letter entry", how=how)


class Actions:
    def __init__(self, web: Web) -> None:
        self.web = web

    # -- plumbing -----------------------------------------------------------------------------
    async def confirm(
        self, request: Request, ask: Callable[[], Awaitable[Confirmation]]
    ) -> Response:
        """The confirmation page ``ask()`` describes; refused when read-only."""
        if self.web.read_only:
            return self.web.read_only_refusal(request)
        try:
            confirmation = await ask()
        except AwaError as exc:
            return self.web.failure(request, exc)
        return self.web.render(request, "confirm.html", confirm=confirmation)

    async def perform(
        self,
        request: Request,
        act: Callable[[dict[str, str]], Awaitable[tuple[str, list[tuple[str, str]]]]],
    ) -> Response:
        """Refused when read-only, then the form (CSRF-checked), then ``act(fields)``: the line
        saying what was done and the links to show with it."""
        if self.web.read_only:
            return self.web.read_only_refusal(request)
        fields = await self.web.posted(request)
        if isinstance(fields, Response):
            return fields
        try:
            message, links = await act(fields)
        except AwaError as exc:
            return self.web.failure(request, exc)
        client = request.client.host if request.client else "?"
        log.info("dashboard action from %s: %s", client, message)
        return self.web.render(request, "done.html", message=message, links=links)

    def job_links(self, request: Request, job: Job) -> list[tuple[str, str]]:
        return [
            (f"job {job.id}", self.web.path(request, "job", job_id=job.id)),
            (f"queue {job.queue}", self.web.path(request, "jobs", {"queue": job.queue})),
        ]

    # -- jobs ---------------------------------------------------------------------------------
    async def cancel_job(self, request: Request) -> Response:
        return await self._on_job(request, _cancel_confirmation, self._cancel, "cancelled")

    async def retry_job(self, request: Request) -> Response:
        return await self._on_job(request, _retry_confirmation, self.web.store.retry, "retried")

    def _cancel(self, job_id: int) -> Job:
        return cancel_job(self.web.store.cancel, job_id)

    async def _on_job(
        self,
        request: Request,
        confirmation: Callable[[Job], Confirmation],
        verb: Callable[[int], Job],
        did: str,
    ) -> Response:
        """An action on the job of the path: its confirmation, or ``verb`` and what it did."""
        path_id: str = request.path_params["job_id"]
        if request.method == "GET":

            async def ask() -> Confirmation:
                job = await self.web.call(self.web.store.get_job, numbers.job_id(path_id))
                return confirmation(job)

            return await self.confirm(request, ask)

        async def act(_: dict[str, str]) -> tuple[str, list[tuple[str, str]]]:
            job = await self.web.call(verb, numbers.job_id(path_id))
            return job_result(did, job), self.job_links(request, job)

        return await self.perform(request, act)

    # -- queues -------------------------------------------------------------------------------
    async def pause_queue(self, request: Request) -> Response:
        return await self._switch(request, paused=True)

    async def resume_queue(self, request: Request) -> Response:
        return await self._switch(request, paused=False)

    async def _switch(self, request: Request, *, paused: bool) -> Response:
        queue: str = request.path_params["queue"]
        store = self.web.store
        if request.method == "GET":

            async def ask() -> Confirmation:
                check_queue(queue)
                detail = (
                    "Workers stop claiming from it; running attempts, inserts and rescue go on."
                    if paused
                    else "Workers claim from it again."
                )
                verb = "Pause" if paused else "Resume"
                return Confirmation(
                    title=f"{verb} queue {queue}",
                    question=f"{verb} queue {queue}?",
                    detail=detail,
                    action="pause_queue" if paused else "resume_queue",
                    params={"queue": queue},
                    button=f"{verb} the queue",
                    danger=paused,
                )

            return await self.confirm(request, ask)

        async def act(_: dict[str, str]) -> tuple[str, list[tuple[str, str]]]:
            await self.web.call(store.pause_queue if paused else store.resume_queue, queue)
            links = [
                ("the queues", self.web.path(request, "queues")),
                (f"jobs of {queue}", self.web.path(request, "jobs", {"queue": queue})),
            ]
            return switched(queue, paused), links

        return await self.perform(request, act)

    async def count_queues(self, request: Request) -> Response:
        if self.web.read_only:
            return self.web.read_only_refusal(request)
        fields = await self.web.posted(request)
        if isinstance(fields, Response):
            return fields
        store = self.web.store
        if not isinstance(store, SummarizesQueues):
            return self.web.refusal(request, 400, "this store keeps no queue summary")
        try:
            await self.web.call(store.summarize_queues)
        except AwaError as exc:
            return self.web.failure(request, exc)
        return RedirectResponse(self.web.path(request, "queues"), status_code=303)

    # -- the dead-letter queue ----------------------------------------------------------------
    async def dlq_retry(self, request: Request) -> Response:
        store = self.web.store
        if request.method == "GET":
            job_id = request.query_params.get("id")
            if job_id:
                return await self.confirm(request, lambda: self._ask_retry_one(job_id))
            return await self.confirm(request, lambda: self._ask_bulk(request, purge=False))

        async def act(fields: dict[str, str]) -> tuple[str, list[tuple[str, str]]]:
            if fields.get("id"):
                job_id = numbers.job_id(fields["id"])
                job = await self.web.call(retry_dead_letter, store, job_id)
                return job_result("back from the dead-letter queue", job), self.job_links(
                    request, job
                )
            queue, kind, every = _bulk_filter(fields)
            _require_filter(queue, kind, every, "retry")
            jobs = await self.web.call(store.bulk_retry_from_dlq, queue=queue, kind=kind, all=every)
            return retried_text(len(jobs), queue, kind), self._dlq_links(request, queue, kind)

        return await self.perform(request, act)

    async def dlq_purge(self, request: Request) -> Response:
        store = self.web.store
        if request.method == "GET":
            return await self.confirm(request, lambda: self._ask_bulk(request, purge=True))

        async def act(fields: dict[str, str]) -> tuple[str, list[tuple[str, str]]]:
            queue, kind, every = _bulk_filter(fields)
            _require_filter(queue, kind, every, "purge")
            purged = await self.web.call(store.purge_dlq, queue=queue, kind=kind, all=every)
            return purged_text(purged, queue, kind), self._dlq_links(request, queue, kind)

        return await self.perform(request, act)

    def _dlq_links(
        self, request: Request, queue: str | None, kind: str | None
    ) -> list[tuple[str, str]]:
        return [
            (
                "the dead-letter queue",
                self.web.path(request, "dlq", {"queue": queue, "kind": kind}),
            ),
            ("the queues", self.web.path(request, "queues")),
        ]

    async def _ask_retry_one(self, text: str) -> Confirmation:
        job_id = numbers.job_id(text)
        entry = await self.web.call(self.web.store.get_dlq_entry, job_id)
        if entry is None:  # say where the job is instead, as the CLI does
            raise await self.web.call(not_dead_lettered, self.web.store, job_id)
        job = entry.job
        return Confirmation(
            title=f"Retry job {job.id} from the dead-letter queue",
            question=f"Move job {job.id} ({job.kind} on {job.queue}) back to available?",
            detail=f"Dead-lettered as {entry.reason}. It gets a fresh attempt budget; its lease"
            " and error history are kept.",
            action="dlq_retry",
            fields={"id": str(job.id)},
            button="Retry the job",
            back="job",
            back_params={"job_id": job.id},
        )

    async def _ask_bulk(self, request: Request, *, purge: bool) -> Confirmation:
        queue, kind, every = _bulk_filter(request.query_params)
        _require_filter(queue, kind, every, "purge" if purge else "retry")
        everything = queue is None and kind is None
        count = await self.web.call(count_dead_letters, self.web.store, queue, kind)
        where = filter_text(queue, kind)
        fields = {"queue": queue or "", "kind": kind or ""}
        if everything:
            fields["all"] = "1"
        if purge:
            return Confirmation(
                title="Purge the dead-letter queue",
                question=f"Permanently delete {count} dead-letter entries ({where})?",
                detail="They cannot be retried afterwards.",
                action="dlq_purge",
                fields=fields,
                button="Delete them",
                danger=True,
                back="dlq",
                back_query={"queue": queue, "kind": kind},
            )
        return Confirmation(
            title="Retry from the dead-letter queue",
            question=f"Retry {count} dead-letter entries ({where})?",
            detail="Each goes back to available with a fresh attempt budget; leases and error"
            " histories are kept.",
            action="dlq_retry",
            fields=fields,
            button="Retry them",
            danger=everything,
            back="dlq",
            back_query={"queue": queue, "kind": kind},
        )


def _cancel_confirmation(job: Job) -> Confirmation:
    running = " Its running handler is signalled to stop." if job.state.is_live else ""
    return Confirmation(
        title=f"Cancel job {job.id}",
        question=f"Cancel job {job.id} ({job.kind} on {job.queue}), now {job.state.value}?",
        detail="It will not run again unless retried." + running,
        action="cancel_job",
        params={"job_id": job.id},
        button="Cancel the job",
        danger=True,
        back="job",
        back_params={"job_id": job.id},
    )


def _retry_confirmation(job: Job) -> Confirmation:
    return Confirmation(
        title=f"Retry job {job.id}",
        question=f"Run job {job.id} ({job.kind} on {job.queue}) again?",
        detail="It gets a fresh attempt budget; its error history is kept.",
        action="retry_job",
        params={"job_id": job.id},
        button="Retry the job",
        back="job",
        back_params={"job_id": job.id},
    )
