"""``awa job list|dump|dump-run|cancel|retry|retry-failed|discard-failed``: inspect and act on
single jobs, and on the failed jobs of a queue or kind at once."""

from __future__ import annotations

import argparse
from typing import Any

from awa.cli import output as out
from awa.cli.arguments import Commands, add_run_at, command, group, job_id, positive
from awa.cli.guards import add_filter_options, confirm, require_filter
from awa.cli.session import Session
from awa.client import Client
from awa.domain import (
    DlqEntry,
    ErrorEntry,
    Job,
    JobState,
    ValidationError,
)
from awa.operations import verbs, wording
from awa.operations.diagnosis import diagnose, error_rounds

__all__ = [
    "add_parser",
    "job_cancel",
    "job_discard_failed",
    "job_dump",
    "job_dump_run",
    "job_list",
    "job_retry",
    "job_retry_failed",
]


def add_parser(commands: Commands) -> None:
    job = group(commands, "job", "inspect and act on jobs")
    p = command(job, "list", "list jobs (outside the dead-letter queue), newest first", job_list)
    p.add_argument("--state", choices=[s.value for s in JobState])
    p.add_argument("--kind")
    p.add_argument("--queue")
    p.add_argument("--limit", type=positive, default=100)
    p.add_argument("--before-id", type=job_id, help="the next page: jobs older than this id")
    p = command(
        job, "dump", "the whole job, its error history attempt by attempt, a diagnosis", job_dump
    )
    p.add_argument("id", type=job_id)
    p = command(
        job,
        "dump-run",
        "one attempt of a job: its errors with tracebacks, live fields",
        job_dump_run,
    )
    p.add_argument("id", type=job_id)
    p.add_argument("--attempt", type=positive, help="attempt number (default: the latest)")
    p = command(job, "cancel", "cancel a job; a running handler is signalled to stop", job_cancel)
    p.add_argument("id", type=job_id)
    p = command(
        job, "retry", "run a failed or cancelled job again with a fresh attempt budget", job_retry
    )
    p.add_argument("id", type=job_id)
    add_run_at(p)
    p = command(
        job,
        "retry-failed",
        "run every failed job of a queue and/or kind again with a fresh attempt budget",
        job_retry_failed,
    )
    add_filter_options(p, "retry", "failed jobs")
    add_run_at(p)
    p = command(
        job,
        "discard-failed",
        "delete every failed job of a queue and/or kind (not the dead-letter queue's)",
        job_discard_failed,
    )
    add_filter_options(p, "delete", "failed jobs")


def job_list(args: argparse.Namespace, session: Session) -> None:
    filters = {"state": args.state, "kind": args.kind, "queue": args.queue}
    with session.client(args) as client:
        jobs = client.list_jobs(**filters, limit=args.limit, before_id=args.before_id)
        # a full page may hide more: is there an older one, and how many match in all?
        more = len(jobs) == args.limit and bool(
            client.list_jobs(**filters, limit=1, before_id=jobs[-1].id)
        )
        total = client.count_jobs(**filters) if more or args.before_id is not None else len(jobs)
    next_before_id = jobs[-1].id if more else None
    if args.json:
        data = {"jobs": [out.job_data(j) for j in jobs], "total": total}
        out.print_json({**data, "next_before_id": next_before_id}, session.stdout)
        return
    out.print_table(None, out.JOB_COLUMNS, out.job_rows(jobs), session.stdout)
    shown = f"{len(jobs)} job(s)" if total == len(jobs) else f"{len(jobs)} of {total} job(s)"
    hint = f", newest first; next page: --before-id {next_before_id}" if more else ""
    out.print_line(f"{shown}{hint}", session.stdout)


def _dlq_entry_of(client: Client, job: Job) -> DlqEntry | None:
    """The dead-letter entry holding ``job``, if any (only a failed job can be there)."""
    if job.state is not JobState.FAILED:
        return None
    return client.store.get_dlq_entry(job.id)


def _job_fields(job: Job) -> list[tuple[str, str]]:
    callback = "-"
    if job.callback_id:
        callback = f"{job.callback_id} (times out {wording.when(job.callback_timeout_at)})"
    fields = [
        ("id", str(job.id)),
        ("kind", job.kind),
        ("queue", job.queue),
        ("state", job.state.value),
        ("attempt", f"{job.attempt} of {job.max_attempts}"),
        ("run_lease", str(job.run_lease)),
        ("priority", str(job.priority)),
        ("args", out.compact_json(job.args)),
        ("tags", ", ".join(job.tags) or "-"),
        ("metadata", out.compact_json(job.metadata) if job.metadata else "-"),
        ("created_at", wording.when(job.created_at)),
        ("run_at", wording.when(job.run_at)),
        ("attempted_at", wording.when(job.attempted_at)),
        ("heartbeat_at", wording.when(job.heartbeat_at)),
        ("deadline_at", wording.when(job.deadline_at)),
        ("finalized_at", wording.when(job.finalized_at)),
        ("progress", out.compact_json(job.progress) if job.progress is not None else "-"),
        ("callback", callback),
    ]
    return [(name, wording.stored(job, name, shown)) for name, shown in fields]


def job_dump(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        job = client.dump_job(args.id)
        dead = _dlq_entry_of(client, job)
    diagnosis = diagnose(job)
    rounds = error_rounds(job.errors)
    if args.json:
        document = {
            "job": out.job_data(job),
            "dlq": None if dead is None else {"reason": dead.reason, "dlq_at": dead.dlq_at},
            "error_rounds": rounds,
            "diagnosis": None if diagnosis is None else str(diagnosis),
            "points_at_process": None if diagnosis is None else diagnosis.points_at_process,
        }
        out.print_json(out.converter.unstructure(document), session.stdout)
        return
    fields = _job_fields(job)
    if dead is not None:
        fields.append(("dead-letter", f"{dead.reason} since {wording.when(dead.dlq_at)}"))
    out.print_fields(f"job {job.id}", fields, session.stdout)
    out.print_line("", session.stdout)
    if job.errors:
        rows = (
            [
                str(r),
                str(e.attempt),
                wording.when(e.at),
                ("terminal: " if e.terminal else "") + _head(e),
            ]
            for r, e in zip(rounds, job.errors, strict=True)
        )
        out.print_table(
            "error history, attempt by attempt", ["round", "attempt", "at", "error"], rows,
            session.stdout,
        )  # fmt: skip
        out.print_line(
            f"(a new round starts when a retry resets the attempt count; full tracebacks:"
            f" awa job dump-run {job.id} --attempt N)",
            session.stdout,
        )
    else:
        out.print_line("no errors recorded", session.stdout)
    if diagnosis is not None:
        out.print_line(f"diagnosis: {diagnosis}", session.stdout)


def _head(entry: ErrorEntry) -> str:
    text = entry.error.strip()
    return text.splitlines()[0] if text else "(empty error)"


def _attempt_errors(job: Job, attempt: int, current: bool) -> list[ErrorEntry]:
    """The errors attempt ``attempt`` recorded: for the live attempt, those since it started;
    for an earlier one, those of the latest round that reached that attempt number."""
    if current:
        started = job.attempted_at
        return [
            e for e in job.errors if e.attempt == attempt and (started is None or e.at >= started)
        ]
    rounds = error_rounds(job.errors)
    matching = [(r, e) for r, e in zip(rounds, job.errors, strict=True) if e.attempt == attempt]
    if not matching:
        return []
    latest = max(r for r, _ in matching)
    return [e for r, e in matching if r == latest]


def job_dump_run(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        job = client.dump_job(args.id)
    if args.attempt is not None:
        attempt = args.attempt
    elif job.attempt > 0:
        attempt = job.attempt
    elif job.errors:
        attempt = job.errors[-1].attempt
    else:
        raise ValidationError(f"job {job.id} has not run yet")
    highest = max([job.attempt, *(e.attempt for e in job.errors)])
    if not 1 <= attempt <= max(highest, 1):
        raise ValidationError(
            f"job {job.id} has run attempts 1 to {highest}; got --attempt {attempt}"
        )
    current = attempt == job.attempt and job.attempted_at is not None
    errors = _attempt_errors(job, attempt, current)
    live: dict[str, Any] = {
        "attempted_at": job.attempted_at if current else None,
        "heartbeat_at": job.heartbeat_at if current else None,
        "deadline_at": job.deadline_at if current else None,
        "finalized_at": job.finalized_at if current else None,
        "progress": job.progress if current else None,
        "callback_id": job.callback_id if current else None,
        "callback_timeout_at": job.callback_timeout_at if current else None,
    }
    if args.json:
        document = {
            "job_id": job.id,
            "kind": job.kind,
            "queue": job.queue,
            "attempt": attempt,
            "current": current,
            "state": job.state.value if current else None,
            "run_lease": job.run_lease if current else None,
            "errors": errors,
            **live,
        }
        out.print_json(out.converter.unstructure(document), session.stdout)
        return
    title = f"job {job.id} ({job.kind} on {job.queue}), attempt {attempt}"
    fields = [("current attempt", "yes" if current else "no (an earlier attempt)")]
    if current:
        fields += [("state", job.state.value), ("run_lease", str(job.run_lease))]
        fields += [(name, wording.when(value)) for name, value in live.items() if "_at" in name]
        fields.append(
            ("progress", out.compact_json(job.progress) if job.progress is not None else "-")
        )
        fields.append(("callback_id", job.callback_id or "-"))
    out.print_fields(title, fields, session.stdout)
    if not errors:
        out.print_line("\nno error recorded for this attempt", session.stdout)
    for entry in errors:
        flag = " (terminal)" if entry.terminal else ""
        out.print_line(f"\nerror at {wording.when(entry.at)}{flag}:\n{entry.error}", session.stdout)
        if entry.traceback:
            out.print_line(entry.traceback.rstrip(), session.stdout)


def job_cancel(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        job = verbs.cancel_job(client.cancel, args.id)
    out.print_job_result("cancelled", job, session.stdout, as_json=args.json)


def job_retry(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        job = client.retry(args.id, run_at=args.run_at)
    out.print_job_result("retried", job, session.stdout, as_json=args.json)


def _failed_matching(client: Client, queue: str | None, kind: str | None) -> str:
    """How many failed jobs match, for a confirmation question."""
    found = len(client.list_jobs(state=JobState.FAILED, queue=queue, kind=kind, limit=5000))
    return f"{found}+" if found >= 5000 else str(found)


def job_retry_failed(args: argparse.Namespace, session: Session) -> None:
    require_filter(args, "retry", "failed job")
    where = wording.filter_text(args.queue, args.kind)
    with session.client(args) as client:
        if args.all and args.queue is None and args.kind is None:
            count = _failed_matching(client, None, None)
            confirm(session, args, f"retry all {count} failed jobs in every queue")
        jobs = client.retry_failed(
            queue=args.queue, kind=args.kind, all=args.all, run_at=args.run_at
        )
    line = f"retried {len(jobs)} failed job(s) ({where}) with a fresh attempt budget"
    out.print_jobs_result("retried", jobs, line, session.stdout, as_json=args.json)


def job_discard_failed(args: argparse.Namespace, session: Session) -> None:
    require_filter(args, "discard", "failed job")
    where = wording.filter_text(args.queue, args.kind)
    with session.client(args) as client:
        count = _failed_matching(client, args.queue, args.kind)
        confirm(session, args, f"permanently delete {count} failed jobs ({where})")
        discarded = client.discard_failed(queue=args.queue, kind=args.kind, all=args.all)
    if args.json:
        out.print_json({"discarded": discarded}, session.stdout)
    else:
        out.print_line(f"discarded {discarded} failed job(s) ({where})", session.stdout)
