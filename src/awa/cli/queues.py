"""``awa queue pause|resume|stats|config|drain``: stop and start claims on a queue, see what it
holds, set what every worker of it reads from the database (DLQ routing, retention), and cancel
what waits in it."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from awa.cli import output as out
from awa.cli.arguments import (
    Commands,
    command,
    duration,
    group,
    limit_or_none,
    on_off,
    rate_or_none,
)
from awa.cli.guards import confirm
from awa.cli.session import Refused, Session
from awa.domain import JobState
from awa.domain.retention import DLQ_RETENTION_S, FAILED_RETENTION_S, FINISHED_RETENTION_S
from awa.operations import wording
from awa.ports import QueueSettings, TracksWorkers, UnhandledKind
from awa.ports.unchanged import UNCHANGED

__all__ = [
    "add_parser",
    "queue_config",
    "queue_drain",
    "queue_pause",
    "queue_resume",
    "queue_stats",
]


def add_parser(commands: Commands) -> None:
    queue = group(commands, "queue", "pause, resume and inspect queues")
    p = command(queue, "pause", "stop claims on a queue (running attempts go on)", queue_pause)
    p.add_argument("queue")
    p = command(queue, "resume", "let workers claim from a paused queue again", queue_resume)
    p.add_argument("queue")
    p = command(
        queue,
        "stats",
        "per queue: jobs per state, DLQ depth, oldest available, paused, and kinds waiting"
        " that no live worker handles",
        queue_stats,
    )
    p.add_argument("--queue", help="only this queue")
    p = command(
        queue,
        "config",
        "set a queue's dead-letter routing and retention, for every worker of it",
        queue_config,
    )
    p.add_argument("queue")
    p.add_argument("--dlq", type=on_off, metavar="on|off", help="route failed jobs to the DLQ")
    p.add_argument(
        "--finished-retention",
        type=duration,
        metavar="DURATION",
        help="keep completed jobs this long (90, 15m, 12h, 7d)",
    )
    p.add_argument(
        "--failed-retention",
        type=duration,
        metavar="DURATION",
        help="keep failed and cancelled jobs (outside the DLQ) this long",
    )
    p.add_argument(
        "--dlq-retention", type=duration, metavar="DURATION", help="keep DLQ entries this long"
    )
    p.add_argument(
        "--concurrency-limit",
        type=limit_or_none,
        default=UNCHANGED,
        metavar="N|none",
        help="at most N attempts of the queue live at once, across every worker (none: no limit)",
    )
    p.add_argument(
        "--rate-limit",
        type=rate_or_none,
        default=UNCHANGED,
        metavar="PER_SECOND,BURST|none",
        help="start at most PER_SECOND attempts a second, BURST at once, across every worker"
        " (none: no limit)",
    )
    p.add_argument(
        "--key-concurrency-limit",
        type=limit_or_none,
        default=UNCHANGED,
        metavar="N|none",
        help="at most N attempts of each concurrency key of the queue live at once (none: no"
        " limit); the keys then take turns",
    )
    p.add_argument(
        "--key-rate-limit",
        type=rate_or_none,
        default=UNCHANGED,
        metavar="PER_SECOND,BURST|none",
        help="start at most PER_SECOND attempts a second, BURST at once, of each concurrency key"
        " (none: no limit)",
    )
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
            f"{wording.switched(args.queue, paused)}; undo with `awa queue resume {args.queue}`",
            session.stdout,
        )
    else:
        out.print_line(wording.switched(args.queue, paused), session.stdout)


def queue_pause(args: argparse.Namespace, session: Session) -> None:
    _queue_switch(args, session, paused=True)


def queue_resume(args: argparse.Namespace, session: Session) -> None:
    _queue_switch(args, session, paused=False)


def _kept(seconds: float | None) -> str:
    return "the workers' default" if seconds is None else wording.human_duration(seconds)


def queue_config(args: argparse.Namespace, session: Session) -> None:
    given = (args.dlq, args.finished_retention, args.failed_retention, args.dlq_retention)
    limits = (
        args.concurrency_limit,
        args.rate_limit,
        args.key_concurrency_limit,
        args.key_rate_limit,
    )
    if all(value is None for value in given) and all(limit is UNCHANGED for limit in limits):
        raise Refused(
            "nothing to set: give --dlq on|off, --finished-retention, --failed-retention,"
            " --dlq-retention, --concurrency-limit, --rate-limit, --key-concurrency-limit or"
            " --key-rate-limit (`awa queue stats` shows the current settings)"
        )
    with session.client(args) as client:
        settings: QueueSettings = client.configure_queue(
            args.queue,
            dlq_enabled=args.dlq,
            finished_retention_s=args.finished_retention,
            dlq_retention_s=args.dlq_retention,
            failed_retention_s=args.failed_retention,
            concurrency_limit=args.concurrency_limit,
            rate_limit=args.rate_limit,
            key_concurrency_limit=args.key_concurrency_limit,
            key_rate_limit=args.key_rate_limit,
        )
    if args.json:
        out.print_json(out.converter.unstructure(settings), session.stdout)
        return
    out.print_line(
        f"queue {settings.queue}: dead-letter queue {'on' if settings.dlq_enabled else 'off'};"
        f" completed jobs kept {_kept(settings.finished_retention_s)}, failed and cancelled"
        f" jobs kept {_kept(settings.failed_retention_s)}, dead letters kept"
        f" {_kept(settings.dlq_retention_s)}{_limits(settings)} (every worker reads these from"
        " the database)",
        session.stdout,
    )


def _limits(settings: QueueSettings) -> str:
    return "" if settings.flow_limits.is_unlimited else f"; {wording.flow_limits_text(settings)}"


def queue_stats(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        stats = client.queue_stats()
        store = client.store
        unhandled = store.unhandled_kinds() if isinstance(store, TracksWorkers) else None
    now = datetime.now(timezone.utc)
    if args.queue is not None:
        stats = [s for s in stats if s.queue == args.queue]
        unhandled = None if unhandled is None else [u for u in unhandled if u.queue == args.queue]
    data = [out.stats_data(s, now) for s in stats]
    if unhandled is not None:  # only a store that tracks workers can tell
        for queue in data:
            queue["unhandled_kinds"] = [
                out.unhandled_data(u, now) for u in unhandled if u.queue == queue["queue"]
            ]
    if args.json:
        out.print_json({"queues": data}, session.stdout)
        return
    states = [s.value for s in JobState]
    short = {"waiting_external": "waiting", "completed": "done", "cancelled": "cancel"}
    columns = [
        "queue",
        "paused",
        *(short.get(s, s) for s in states),
        "dlq",
        "oldest avail",
        "keep done/failed/dlq",
        "live/limit, rate",
    ]
    rows = (
        [
            d["queue"],
            "PAUSED" if d["paused"] else "no",
            *(str(d["counts"][s]) for s in states),
            f"{d['dlq_depth']}{'' if d['dlq_enabled'] else ' (off)'}",
            wording.human_duration(d["oldest_available_age_s"]),
            "/".join(_default(d[f"{kept}_retention_s"]) for kept in _KEPT),
            wording.flow_column(queue),
        ]
        for d, queue in zip(data, stats, strict=True)
    )
    out.print_table(None, columns, rows, session.stdout)
    if any(d[f"{kept}_retention_s"] is None for d in data for kept in _KEPT):
        out.print_line(_DEFAULTS_NOTE, session.stdout)
    for waiting in unhandled or []:
        out.print_line(_unhandled_warning(waiting, now), session.stdout)


def _unhandled_warning(waiting: UnhandledKind, now: datetime) -> str:
    age = wording.human_duration((now - waiting.oldest_run_at).total_seconds())
    return (
        f"warning: {waiting.runnable} {waiting.kind} job(s) wait on queue {waiting.queue}"
        f" (oldest {age}) and no live worker there handles {waiting.kind}: start one, or"
        " insert on the queue its workers listen on (declare it once with @awa.job_kind)"
    )


_KEPT = ("finished", "failed", "dlq")
#: what "default" in the retention column stands for
_DEFAULTS_NOTE = (
    "keep: default is the maintenance leader's RuntimeConfig: completed"
    f" {wording.human_duration(FINISHED_RETENTION_S)}, failed and cancelled"
    f" {wording.human_duration(FAILED_RETENTION_S)}, dead letters"
    f" {wording.human_duration(DLQ_RETENTION_S)} unless its worker sets others"
)


def _default(seconds: float | None) -> str:
    return "default" if seconds is None else wording.human_duration(seconds)


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
