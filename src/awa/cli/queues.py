"""``awa queue pause|resume|stats``: stop and start claims on a queue, and see what it holds."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from awa.cli import output as out
from awa.cli.arguments import Commands, command, group
from awa.cli.session import Session
from awa.domain import JobState

__all__ = ["add_parser", "queue_pause", "queue_resume", "queue_stats", "switched"]


def add_parser(commands: Commands) -> None:
    queue = group(commands, "queue", "pause, resume and inspect queues")
    p = command(queue, "pause", "stop claims on a queue (running attempts go on)", queue_pause)
    p.add_argument("queue")
    p = command(queue, "resume", "let workers claim from a paused queue again", queue_resume)
    p.add_argument("queue")
    p = command(
        queue,
        "stats",
        "per queue: jobs per state, DLQ depth, oldest available, paused",
        queue_stats,
    )
    p.add_argument("--queue", help="only this queue")


def _queue_switch(args: argparse.Namespace, session: Session, paused: bool) -> None:
    with session.client(args) as client:
        if paused:
            client.pause_queue(args.queue)
        else:
            client.resume_queue(args.queue)
    if args.json:
        out.print_json({"queue": args.queue, "paused": paused}, session.stdout)
    elif paused:
        out.print_line(
            f"{switched(args.queue, paused)}; undo with `awa queue resume {args.queue}`",
            session.stdout,
        )
    else:
        out.print_line(switched(args.queue, paused), session.stdout)


def switched(queue: str, paused: bool) -> str:
    """What pausing or resuming ``queue`` did, in one line."""
    if paused:
        return f"queue {queue} paused: no new claims (running attempts, inserts and rescue go on)"
    return f"queue {queue} resumed: workers claim from it again"


def queue_pause(args: argparse.Namespace, session: Session) -> None:
    _queue_switch(args, session, paused=True)


def queue_resume(args: argparse.Namespace, session: Session) -> None:
    _queue_switch(args, session, paused=False)


def queue_stats(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        stats = client.queue_stats()
    now = datetime.now(timezone.utc)
    if args.queue is not None:
        stats = [s for s in stats if s.queue == args.queue]
    data = [out.stats_data(s, now) for s in stats]
    if args.json:
        out.print_json({"queues": data}, session.stdout)
        return
    states = [s.value for s in JobState]
    short = {"waiting_external": "waiting", "completed": "done", "cancelled": "cancel"}
    columns = ["queue", "paused", *(short.get(s, s) for s in states), "dlq", "oldest avail"]
    rows = (
        [
            d["queue"],
            "PAUSED" if d["paused"] else "no",
            *(str(d["counts"][s]) for s in states),
            f"{d['dlq_depth']}{'' if d['dlq_enabled'] else ' (off)'}",
            out.human_duration(d["oldest_available_age_s"]),
        ]
        for d in data
    )
    out.print_table(None, columns, rows, session.stdout)
