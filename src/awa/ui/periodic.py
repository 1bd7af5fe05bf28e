"""The periodic schedules: their page and their actions, each the same store verb, with the
same words, as the ``awa cron`` command that does it.

==============================  =========================  ==================================
path                            store verb                 the CLI
==============================  =========================  ==================================
``/periodic`` (the page)        ``list_schedules``         ``awa cron list``
``/periodic/{name}/pause``      ``set_schedule_paused``    ``awa cron pause NAME``
``/periodic/{name}/resume``     ``set_schedule_paused``    ``awa cron resume NAME``
``/periodic/{name}/trigger``    ``trigger_schedule``       ``awa cron trigger NAME``
``/periodic/{name}/remove``     ``remove_schedule``        ``awa cron remove NAME``
==============================  =========================  ==================================

As the other actions: a confirmation page (``GET``), then the form (``POST``); an unknown
schedule is a 404, a name no schedule can have a 400, and a read-only dashboard a 403.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from awa.domain import AwaError, ScheduleNotFound, ScheduleRecord
from awa.domain.periodic import check_schedule_name
from awa.operations.wording import (
    job_result,
    paused_text,
    removed_text,
    resumed_text,
    triggered_text,
    when,
)
from awa.ui.actions import Actions, Confirmation
from awa.ui.web import Web

__all__ = ["Schedules"]

Links = list[tuple[str, str]]


class Schedules:
    def __init__(self, web: Web, actions: Actions) -> None:
        self.web = web
        self.actions = actions

    # -- /periodic --------------------------------------------------------------------------
    async def page(self, request: Request) -> Response:
        try:
            records = await self.web.call(self.web.store.list_schedules)
        except AwaError as exc:
            return self.web.failure(request, exc)
        return self.web.render(request, "periodic.html", live=True, schedules=records)

    # -- actions ----------------------------------------------------------------------------
    async def pause(self, request: Request) -> Response:
        async def act(name: str) -> tuple[str, Links]:
            record = await self.web.call(self.web.store.set_schedule_paused, name, True)
            return paused_text(record), self._links(request)

        return await self._on_schedule(request, _pause_confirmation, act)

    async def resume(self, request: Request) -> Response:
        async def act(name: str) -> tuple[str, Links]:
            record = await self.web.call(self.web.store.set_schedule_paused, name, False)
            return resumed_text(record), self._links(request)

        return await self._on_schedule(request, _resume_confirmation, act)

    async def trigger(self, request: Request) -> Response:
        async def act(name: str) -> tuple[str, Links]:
            job = await self.web.call(self.web.store.trigger_schedule, name)
            links = self.actions.job_links(request, job) + self._links(request)
            return job_result(triggered_text(name), job), links

        return await self._on_schedule(request, _trigger_confirmation, act)

    async def remove(self, request: Request) -> Response:
        async def act(name: str) -> tuple[str, Links]:
            await self.web.call(self.web.store.remove_schedule, name)
            return removed_text(name), self._links(request)

        return await self._on_schedule(request, _remove_confirmation, act)

    # -- plumbing -----------------------------------------------------------------------------
    async def _on_schedule(
        self,
        request: Request,
        confirmation: Callable[[ScheduleRecord], Confirmation],
        act: Callable[[str], Awaitable[tuple[str, Links]]],
    ) -> Response:
        """An action on the schedule of the path: its confirmation, or ``act`` and what it
        did."""
        name: str = request.path_params["schedule"]
        if request.method == "GET":

            async def ask() -> Confirmation:
                return confirmation(await self._find(name))

            return await self.actions.confirm(request, ask)
        return await self.actions.perform(request, lambda _: act(name))

    async def _find(self, name: str) -> ScheduleRecord:
        """The schedule of this name (``ScheduleNotFound`` without one); the store has no verb
        for one schedule, and a deployment has a handful of them."""
        check_schedule_name(name)
        for record in await self.web.call(self.web.store.list_schedules):
            if record.name == name:
                return record
        raise ScheduleNotFound(name)

    def _links(self, request: Request) -> Links:
        return [("the periodic schedules", self.web.path(request, "periodic"))]


def _confirmation(
    record: ScheduleRecord,
    *,
    title: str,
    question: str,
    detail: str,
    action: str,
    button: str,
    danger: bool = False,
) -> Confirmation:
    return Confirmation(
        title=title,
        question=question,
        detail=detail,
        action=action,
        params={"schedule": record.name},
        button=button,
        danger=danger,
        back="periodic",
    )


def _pause_confirmation(record: ScheduleRecord) -> Confirmation:
    return _confirmation(
        record,
        title=f"Pause schedule {record.name}",
        question=f"Pause schedule {record.name} ({record.schedule.describe()})?",
        detail="No process fires it until it is resumed; the fires it misses meanwhile are not"
        " made up.",
        action="pause_schedule",
        button="Pause the schedule",
        danger=True,
    )


def _resume_confirmation(record: ScheduleRecord) -> Confirmation:
    return _confirmation(
        record,
        title=f"Resume schedule {record.name}",
        question=f"Resume schedule {record.name} ({record.schedule.describe()})?",
        detail="It fires again from now on; what it missed while paused is not made up.",
        action="resume_schedule",
        button="Resume the schedule",
    )


def _trigger_confirmation(record: ScheduleRecord) -> Confirmation:
    job = record.schedule.job
    next_fire = "paused" if record.paused else f"at {when(record.next_fire_at)}"
    return _confirmation(
        record,
        title=f"Trigger schedule {record.name}",
        question=f"Insert one run of {job.kind} on {job.queue} now, for schedule {record.name}?",
        detail=f"Its timing does not move: the next fire stays {next_fire}.",
        action="trigger_schedule",
        button="Insert the run",
    )


def _remove_confirmation(record: ScheduleRecord) -> Confirmation:
    return _confirmation(
        record,
        title=f"Remove schedule {record.name}",
        question=f"Delete schedule {record.name} ({record.schedule.describe()})?",
        detail="A process that declares it adds it back when it starts: remove it from the code"
        " too. To stop it firing for a while, pause it instead.",
        action="remove_schedule",
        button="Delete the schedule",
        danger=True,
    )
