"""``awa dlq list|depth|retry|retry-bulk|purge``: the dead-letter queue, inspected and redriven.

Bulk commands refuse to run without a filter unless ``--all``; destructive ones ask first on a
terminal and refuse without ``--yes`` when stdin is not one (``awa.cli.guards``)."""

from __future__ import annotations

import argparse

from awa.cli import output as out
from awa.cli.arguments import Commands, add_run_at, command, group, job_id, positive
from awa.cli.guards import add_filter_options, confirm, require_filter
from awa.cli.session import Refused, Session
from awa.domain import JobNotFound
from awa.operations import refusals, verbs, wording

__all__ = [
    "add_parser",
    "dlq_depth",
    "dlq_list",
    "dlq_purge",
    "dlq_retry",
    "dlq_retry_bulk",
]


def add_parser(commands: Commands) -> None:
    dlq = group(
        commands, "dlq", "the dead-letter queue: failed jobs kept for inspection and redrive"
    )
    p = command(dlq, "list", "dead-letter entries, newest first", dlq_list)
    p.add_argument("--queue")
    p.add_argument("--kind")
    p.add_argument("--limit", type=positive, default=100)
    p.add_argument("--before-id", type=job_id, help="the next page: entries older than this id")
    p = command(dlq, "depth", "how many entries each queue holds", dlq_depth)
    p.add_argument("--queue", help="only this queue")
    p = command(
        dlq, "retry", "move one entry back to available with a fresh attempt budget", dlq_retry
    )
    p.add_argument("id", type=job_id)
    add_run_at(p)
    p = command(
        dlq, "retry-bulk", "retry every matching entry with a fresh attempt budget", dlq_retry_bulk
    )
    add_filter_options(p, "retry", "entries")
    add_run_at(p)
    p = command(dlq, "purge", "delete one entry (ID) or the matching entries, for good", dlq_purge)
    p.add_argument("id", type=job_id, nargs="?", help="only this entry")
    add_filter_options(p, "delete", "entries")


# -- the commands --------------------------------------------------------------------------------


def dlq_list(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        entries = client.list_dlq(
            queue=args.queue, kind=args.kind, limit=args.limit, before_id=args.before_id
        )
    if args.json:
        out.print_json({"entries": [out.dlq_entry_data(e) for e in entries]}, session.stdout)
        return
    rows = (
        [
            str(e.job.id),
            e.job.kind,
            e.job.queue,
            e.reason,
            wording.when(e.dlq_at),
            wording.attempts(e.job),
            str(e.job.run_lease),
            wording.last_error(e.job),
        ]
        for e in entries
    )
    columns = ["id", "kind", "queue", "reason", "dlq_at", "attempt", "lease", "last error"]
    out.print_table(None, columns, rows, session.stdout)
    out.print_line(
        f"{len(entries)} dead-letter entr{'y' if len(entries) == 1 else 'ies'}", session.stdout
    )


def dlq_depth(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        stats = client.queue_stats()
    depths = {s.queue: s.dlq_depth for s in stats if s.dlq_depth or s.queue == args.queue}
    if args.queue is not None:
        depths = {args.queue: depths.get(args.queue, 0)}
    total = sum(depths.values())
    if args.json:
        out.print_json({"total": total, "queues": depths}, session.stdout)
        return
    out.print_table(
        None, ["queue", "dlq depth"], ([q, str(n)] for q, n in depths.items()), session.stdout
    )
    out.print_line(f"total: {total}", session.stdout)


def dlq_retry(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        job = verbs.retry_dead_letter(client.store, args.id, args.run_at)
    out.print_job_result("back from the dead-letter queue", job, session.stdout, as_json=args.json)


def dlq_retry_bulk(args: argparse.Namespace, session: Session) -> None:
    require_filter(args, "retry", "dead-letter entry")
    with session.client(args) as client:
        if args.all and args.queue is None and args.kind is None:
            count = verbs.count_dead_letters(client.store, None, None)
            confirm(session, args, f"retry all {count} dead-letter entries in every queue")
        jobs = client.bulk_retry_from_dlq(
            queue=args.queue, kind=args.kind, all=args.all, run_at=args.run_at
        )
    line = wording.retried_text(len(jobs), args.queue, args.kind)
    out.print_jobs_result("retried", jobs, line, session.stdout, as_json=args.json)


def dlq_purge(args: argparse.Namespace, session: Session) -> None:
    if args.id is not None:
        _purge_one(args, session)
        return
    require_filter(args, "purge", "dead-letter entry")
    with session.client(args) as client:
        count = verbs.count_dead_letters(client.store, args.queue, args.kind)
        where = wording.filter_text(args.queue, args.kind)
        confirm(session, args, f"permanently delete {count} dead-letter entries ({where})")
        purged = client.purge_dlq(queue=args.queue, kind=args.kind, all=args.all)
    if args.json:
        out.print_json({"purged": purged}, session.stdout)
    else:
        out.print_line(wording.purged_text(purged, args.queue, args.kind), session.stdout)


def _purge_one(args: argparse.Namespace, session: Session) -> None:
    if args.queue is not None or args.kind is not None or args.all:
        raise Refused("give an entry's ID or --queue/--kind/--all, not both")
    with session.client(args) as client:
        confirm(session, args, f"permanently delete dead-letter entry {args.id}")
        try:
            client.purge_dlq_job(args.id)
        except JobNotFound:
            elsewhere = client.get_job(args.id)  # JobNotFound again when it is nowhere
            raise refusals.JobNotInDlq(
                f"job {args.id} is not in the dead-letter queue (it is {elsewhere.state.value});"
                " nothing changed"
            ) from None
    if args.json:
        out.print_json({"purged": 1, "id": args.id}, session.stdout)
    else:
        out.print_line(f"purged dead-letter entry {args.id}", session.stdout)
