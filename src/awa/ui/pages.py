"""The dashboard's pages (``GET``): the queues, the jobs, one job, the dead-letter queue.

Each reads the store through its port's verbs, never SQL of its own; the listings (``/jobs``,
``/dlq``) read job summaries (``list_job_summaries``), never a job's args or error history, so
a page costs the same whatever the jobs carry. The queues page reads the
store's queue summary (``awa.ports.SummarizesQueues``), one row counted by the maintenance
leader, so a page view never counts the job table; a store without a summary is counted with
``queue_stats()``.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from awa.domain import AwaError, JobState, ValidationError
from awa.domain.validation import check_state
from awa.operations.diagnosis import diagnose
from awa.ports import BATCH_SIZE_MAX, DlqGroup, QueueStats, QueueSummary, SummarizesQueues
from awa.ui import numbers, views
from awa.ui.numbers import whole_number
from awa.ui.web import Web

__all__ = ["PAGE_SIZES", "Pages"]

#: the page sizes the jobs page offers (the first is the default)
PAGE_SIZES = (50, 100, 200, 25)
#: the dead-letter entries the DLQ page lists under its groups
DLQ_ENTRIES_SHOWN = 100


def _text(request: Request, name: str) -> str | None:
    value = request.query_params.get(name, "").strip()
    return value or None


class Pages:
    def __init__(self, web: Web) -> None:
        self.web = web
        self.summarizes = isinstance(web.store, SummarizesQueues)

    async def _summary(self) -> QueueSummary | None:
        store = self.web.store
        if isinstance(store, SummarizesQueues):
            return await self.web.call(store.queue_summary)
        return None

    async def counts(self) -> tuple[QueueSummary | None, tuple[QueueStats, ...]]:
        """The summary (``None`` without one) and the queues it counted; a store without a
        summary is counted now."""
        summary = await self._summary()
        if summary is not None:
            return summary, summary.queues
        if self.summarizes:
            return None, ()
        return None, tuple(await self.web.call(self.web.store.queue_stats))

    # -- / ----------------------------------------------------------------------------------
    async def queues(self, request: Request) -> Response:
        try:
            summary, stats = await self.counts()
        except AwaError as exc:
            return self.web.failure(request, exc)
        now = self.web.now()
        rows = views.queue_rows(stats, summary.ended if summary else {}, now)
        counted_s = views.summary_age_s(summary, now)
        return self.web.render(
            request,
            "queues.html",
            live=True,
            rows=rows,
            summary=summary,
            summarizes=self.summarizes,
            counted_s=counted_s,
            stale=counted_s is not None and counted_s > self.web.stale_after_s,
            shown_states=list(JobState),
        )

    # -- /jobs ------------------------------------------------------------------------------
    async def jobs(self, request: Request) -> Response:
        web = self.web
        params = request.query_params
        try:
            jump = whole_number("job id", params.get("id"))
            if jump is not None:
                return RedirectResponse(web.path(request, "job", job_id=jump), status_code=303)
            state_text = _text(request, "state")
            state = check_state(state_text) if state_text is not None else None
            before = whole_number("before", params.get("before"))
            size = whole_number("limit", params.get("limit")) or PAGE_SIZES[0]
            if size not in PAGE_SIZES:
                raise ValidationError(f"limit must be one of {sorted(PAGE_SIZES)}, got {size}")
            filters: dict[str, Any] = {
                "state": state,
                "queue": _text(request, "queue"),
                "kind": _text(request, "kind"),
                "tag": _text(request, "tag"),
            }
            found = await web.call(
                web.store.list_job_summaries, **filters, before_id=before, limit=size + 1
            )
            summary, stats = await self.counts()
        except AwaError as exc:
            return web.failure(request, exc)
        jobs, more = found[:size], len(found) > size
        query = {**filters, "state": state.value if state else None, "limit": size}
        if query["limit"] == PAGE_SIZES[0]:
            query["limit"] = None
        return web.render(
            request,
            "jobs.html",
            live=before is None,
            jobs=jobs,
            query=query,
            newer=before is not None,
            older={**query, "before": jobs[-1].id} if more else None,
            page_sizes=PAGE_SIZES,
            queue_names=[s.queue for s in stats],
            counted=_counted(summary, stats, state, filters),
        )

    # -- /jobs/{id} -------------------------------------------------------------------------
    async def job(self, request: Request) -> Response:
        web = self.web
        try:
            job_id = numbers.job_id(request.path_params["job_id"])
            job = await web.call(web.store.get_job, job_id)
            dead = None
            if job.state is JobState.FAILED:
                dead = await web.call(web.store.get_dlq_entry, job_id)
        except AwaError as exc:
            return web.failure(request, exc)
        return web.render(
            request,
            "job.html",
            live=not job.state.is_terminal,
            job=job,
            dead=dead,
            diagnosis=diagnose(job),
            timeline=views.timeline(job, dead),
        )

    # -- /dlq -------------------------------------------------------------------------------
    async def dlq(self, request: Request) -> Response:
        web = self.web
        queue, kind = _text(request, "queue"), _text(request, "kind")
        try:
            entries = await web.call(
                web.store.list_job_summaries,
                home="dlq",
                queue=queue,
                kind=kind,
                limit=DLQ_ENTRIES_SHOWN,
            )
            summary = await self._summary()
            if summary is not None or self.summarizes:
                groups = summary.dlq if summary is not None else ()
            else:
                groups = await self._groups_counted_now(queue, kind)
        except AwaError as exc:
            return web.failure(request, exc)
        shown = [
            g
            for g in groups
            if (queue is None or g.queue == queue) and (kind is None or g.kind == kind)
        ]
        return web.render(
            request,
            "dlq.html",
            live=True,
            entries=entries,
            groups=shown,
            total=sum(g.count for g in shown),
            summary=summary,
            summarizes=self.summarizes,
            query={"queue": queue, "kind": kind},
            entries_max=DLQ_ENTRIES_SHOWN,
        )

    async def _groups_counted_now(
        self, queue: str | None, kind: str | None
    ) -> tuple[DlqGroup, ...]:
        """Groups of a store without a summary: counted from up to a batch of entries."""
        entries = await self.web.call(
            self.web.store.list_job_summaries,
            home="dlq",
            queue=queue,
            kind=kind,
            limit=BATCH_SIZE_MAX,
        )
        latest: dict[tuple[str, str, str], datetime] = {}
        counts: Counter[tuple[str, str, str]] = Counter()
        for entry in entries:
            if entry.dlq_reason is None or entry.dlq_at is None:
                continue  # not a dead letter: home="dlq" lists none
            key = (entry.queue, entry.kind, entry.dlq_reason)
            counts[key] += 1
            latest[key] = max(entry.dlq_at, latest.get(key, entry.dlq_at))
        return tuple(DlqGroup(*key, count=n, latest_at=latest[key]) for key, n in counts.items())


def _counted(
    summary: QueueSummary | None,
    stats: tuple[QueueStats, ...],
    state: JobState | None,
    filters: dict[str, Any],
) -> int | None:
    """How many jobs the filter matches, when the counts say (no kind or tag filter)."""
    if filters["kind"] or filters["tag"] or not stats:
        return None
    chosen = [s for s in stats if filters["queue"] is None or s.queue == filters["queue"]]
    if state is not None:
        return sum(s.counts.get(state, 0) for s in chosen)
    return sum(sum(s.counts.values()) for s in chosen)
