"""``awa cron list|pause|resume|trigger|remove``: the periodic schedules the workers fire.

Schedules are registered by the processes that declare them (``client.periodic(...)`` before
``start()``); these commands look at them and steer them in the database, for every process.
"""

from __future__ import annotations

import argparse
from typing import Any

from awa.cli import output as out
from awa.cli.arguments import Commands, command, group
from awa.cli.session import Session
from awa.domain import ScheduleRecord
from awa.operations import wording

__all__ = [
    "add_parser",
    "cron_list",
    "cron_pause",
    "cron_remove",
    "cron_resume",
    "cron_trigger",
    "schedule_data",
]


def add_parser(commands: Commands) -> None:
    cron = group(commands, "cron", "periodic schedules: list, pause, resume, trigger, remove")
    command(cron, "list", "every schedule with its next and last fire", cron_list)
    for name, helptext, run in (
        ("pause", "stop a schedule firing (for every process) until resumed", cron_pause),
        ("resume", "fire a paused schedule again, from now on", cron_resume),
        (
            "trigger",
            "insert one run of the schedule's job now; its timing does not move",
            cron_trigger,
        ),
        (
            "remove",
            "delete a schedule (a process that declares it brings it back when it starts)",
            cron_remove,
        ),
    ):
        p = command(cron, name, helptext, run)
        p.add_argument("name")


def schedule_data(record: ScheduleRecord) -> dict[str, Any]:
    schedule, job = record.schedule, record.schedule.job
    data: dict[str, Any] = out.converter.unstructure(
        {
            "name": record.name,
            "cron": schedule.cron,
            "timezone": schedule.timezone,
            "timing": schedule.describe(),
            "missed_fire_policy": schedule.missed_fire_policy,
            "kind": job.kind,
            "queue": job.queue,
            "priority": job.priority,
            "max_attempts": job.max_attempts,
            "args": job.args,
            "paused": record.paused,
            "next_fire_at": record.next_fire_at,
            "last_fire_at": record.last_fire_at,
            "created_at": record.created_at,
            "updated_at": record.updated_at,
        }
    )
    return data


def cron_list(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        records = client.list_periodic()
    if args.json:
        out.print_json({"schedules": [schedule_data(r) for r in records]}, session.stdout)
        return
    columns = [
        "name",
        "cron",
        "timing",
        "kind",
        "queue",
        "missed",
        "paused",
        "next fire",
        "last fire",
    ]
    rows = (
        [
            r.name,
            r.schedule.cron,
            r.schedule.describe(),
            r.schedule.job.kind,
            r.schedule.job.queue,
            r.schedule.missed_fire_policy,
            "PAUSED" if r.paused else "no",
            "-" if r.paused else wording.when(r.next_fire_at),
            wording.when(r.last_fire_at),
        ]
        for r in records
    )
    out.print_table(None, columns, rows, session.stdout)
    out.print_line(f"{len(records)} schedule(s)", session.stdout)


def _show(record: ScheduleRecord, said: str, args: argparse.Namespace, session: Session) -> None:
    if args.json:
        out.print_json({"schedule": schedule_data(record)}, session.stdout)
    else:
        out.print_line(said, session.stdout)


def cron_pause(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        record = client.pause_periodic(args.name)
    said = f"{wording.paused_text(record)}; undo with `awa cron resume {record.name}`"
    _show(record, said, args, session)


def cron_resume(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        record = client.resume_periodic(args.name)
    _show(record, wording.resumed_text(record), args, session)


def cron_trigger(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        job = client.trigger_periodic(args.name)
    out.print_job_result(
        wording.triggered_text(args.name),
        job,
        session.stdout,
        as_json=args.json,
        about={"schedule": args.name},
    )


def cron_remove(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        client.remove_periodic(args.name)
    if args.json:
        out.print_json({"removed": args.name}, session.stdout)
    else:
        out.print_line(wording.removed_text(args.name), session.stdout)
