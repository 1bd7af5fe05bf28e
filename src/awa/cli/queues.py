"""``awa queue pause|resume|stats|drain``: stop and start claims on a queue, see what it holds,
and cancel what waits in it."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from awa.cli import output as out
from awa.cli.arguments import Commands, command, group
from awa.cli.guards import confirm
from awa.cli.session import Session
from awa.domain import JobState

__all__ = ["add_parser", "queue_drain", "queue_pause", "queue_resume", "queue_stats"]


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
    p = command(
        queue,
        "drain",
        "cancel every job of a queue that is not running (running attempts finish)",
        queue_drain,
    )
    p.add_argument("queue")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


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
            f"queue {args.queue} paused: no new claims (running attempts, inserts and rescue go"
            f" on); undo with `awa queue resume {args.queue}`",
            session.stdout,
        )
    else:
        out.print_line(f"queue {args.queue} resumed: workers claim from it again", session.stdout)


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


def queue_drain(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        confirm(session, args, f"cancel every job of queue {args.queue} that is not running")
        cancelled = client.drain_queue(args.queue)
    if args.json:
        out.print_json({"queue": args.queue, "cancelled": cancelled}, session.stdout)
    else:
        out.print_line(
            f"queue {args.queue} drained: {cancelled} job(s) cancelled; running attempts go on",
            session.stdout,
        )
