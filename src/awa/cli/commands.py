"""What each ``awa`` command does: one function per command, over an ``awa.Client``.

Every function takes the parsed arguments and the ``Session`` (streams, the client) and either
prints its result (a table, or one JSON document with ``--json``) or raises: an ``AwaError``
or ``Refused``, which ``awa.cli.main`` turns into a one-line message and a non-zero exit.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, TextIO

import attrs

from awa.cli import output as out
from awa.cli.connect import database_url, open_store
from awa.cli.diagnosis import diagnose, error_rounds
from awa.client import Client
from awa.domain import (
    AwaError,
    DlqEntry,
    ErrorEntry,
    IllegalTransition,
    Job,
    JobNotFound,
    JobState,
    ValidationError,
)
from awa.ports import BATCH_SIZE_MAX

__all__ = ["COMMANDS", "Refused", "Session"]


class Refused(Exception):
    """The command line asks for something the CLI will not do as given (exit code 2)."""


class NotCancellable(AwaError):
    """``job cancel`` of a terminal job: the store's ``IllegalTransition`` in operator words."""


class JobNotInDlq(AwaError):
    """``dlq retry`` of a job that exists but is not dead-lettered."""


@attrs.define
class Session:
    """The command's world: its arguments' streams and environment, and a client once opened."""

    stdout: TextIO
    stderr: TextIO
    stdin: TextIO
    environ: Mapping[str, str]

    @contextmanager
    def client(self, args: argparse.Namespace) -> Iterator[Client]:
        url = database_url(args.database_url, self.environ)
        with open_store(url) as store:
            yield Client(store=store)


Command = Callable[[argparse.Namespace, Session], None]


# -- helpers ----------------------------------------------------------------------------------


def _payload(args: argparse.Namespace) -> Any:
    text = getattr(args, "payload", None)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise Refused(f"--payload is not valid JSON: {exc}") from None
    except RecursionError:  # the domain allows 64 levels; this is past a thousand
        raise Refused("--payload is nested too deeply to read") from None
    except ValueError:  # int() refuses a literal of more than sys.get_int_max_str_digits()
        raise Refused("--payload holds a number too long to read") from None


def _filter_text(queue: str | None, kind: str | None) -> str:
    parts = ([f"queue={queue}"] if queue else []) + ([f"kind={kind}"] if kind else [])
    return ", ".join(parts) or "every queue and kind"


def _require_filter(args: argparse.Namespace, verb: str) -> None:
    if args.queue is None and args.kind is None and not args.all:
        raise Refused(
            f"refusing to {verb} every dead-letter entry: give --queue and/or --kind, or --all"
        )


def _confirm(session: Session, args: argparse.Namespace, action: str) -> None:
    """Ask whether to ``action`` on a terminal; without one, only ``--yes`` lets it go on."""
    if args.yes:
        return
    if not session.stdin.isatty():
        raise Refused(f"refusing to {action} without --yes: stdin is not a terminal")
    session.stderr.write(f"{action}? [y/N] ")
    session.stderr.flush()
    answer = session.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise Refused("not confirmed; nothing changed")


def _dlq_matching(client: Client, queue: str | None, kind: str | None) -> str:
    """How many dead-letter entries match, for a confirmation question."""
    found = len(client.list_dlq(queue=queue, kind=kind, limit=BATCH_SIZE_MAX))
    return f"{found}+" if found >= BATCH_SIZE_MAX else str(found)


def _dlq_entry_of(client: Client, job: Job) -> DlqEntry | None:
    """The dead-letter entry holding ``job``, if any (only a failed job can be there)."""
    if job.state is not JobState.FAILED:
        return None
    return client.store.get_dlq_entry(job.id)


def _last_error(job: Job) -> str:
    if not job.errors:
        return "-"
    line = job.errors[-1].error.strip().splitlines()[0] if job.errors[-1].error.strip() else ""
    return line if len(line) <= 80 else line[:77] + "..."


def _attempts(job: Job) -> str:
    return f"{job.attempt}/{job.max_attempts}"


def _print_job_line(session: Session, verb: str, job: Job) -> None:
    out.print_line(
        f"job {job.id} ({job.kind} on {job.queue}) {verb}; state {job.state.value},"
        f" attempt {_attempts(job)}, run_lease {job.run_lease}",
        session.stdout,
    )


def _job_rows(jobs: list[Job]) -> Iterator[list[str]]:
    for job in jobs:
        yield [
            str(job.id),
            job.kind,
            job.queue,
            job.state.value,
            _attempts(job),
            str(job.priority),
            out.when(job.run_at),
            _last_error(job),
        ]


_JOB_COLUMNS = ["id", "kind", "queue", "state", "attempt", "prio", "run_at", "last error"]


# -- migrate ----------------------------------------------------------------------------------


def migrate(args: argparse.Namespace, session: Session) -> None:
    from awa.adapters.postgres.migrations import LATEST_VERSION, MIGRATIONS

    if args.sql:
        if args.json:
            out.print_json(
                {
                    "migrations": [
                        {"version": m.version, "name": m.name, "checksum": m.checksum, "sql": m.sql}
                        for m in MIGRATIONS
                    ]
                },
                session.stdout,
            )
            return
        session.stdout.write(
            "-- awa migrations, in order. `awa migrate` runs the pending ones in one transaction\n"
            "-- under an advisory lock, after CREATE SCHEMA IF NOT EXISTS awa and the version\n"
            "-- ledger awa.schema_version, and records each version it applies there.\n"
        )
        for m in MIGRATIONS:
            session.stdout.write(
                f"\n-- ===== migration {m.version:04d}_{m.name} (sha256 {m.checksum}) =====\n"
            )
            session.stdout.write(m.sql if m.sql.endswith("\n") else m.sql + "\n")
        return
    url = database_url(args.database_url, session.environ)
    with open_store(url) as store:
        applied = store.migrate()
    if args.json:
        out.print_json({"applied": applied, "version": LATEST_VERSION}, session.stdout)
    elif applied:
        versions = ", ".join(str(v) for v in applied)
        out.print_line(
            f"applied migration(s) {versions}; schema at version {LATEST_VERSION}", session.stdout
        )
    else:
        out.print_line(f"nothing to do; schema already at version {LATEST_VERSION}", session.stdout)


# -- job --------------------------------------------------------------------------------------


def job_list(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        jobs = client.list_jobs(
            state=args.state, kind=args.kind, queue=args.queue, limit=args.limit
        )
    if args.json:
        out.print_json({"jobs": [out.job_data(j) for j in jobs]}, session.stdout)
        return
    out.print_table(None, _JOB_COLUMNS, _job_rows(jobs), session.stdout)
    out.print_line(f"{len(jobs)} job(s)", session.stdout)


def _job_fields(job: Job) -> list[tuple[str, str]]:
    callback = "-"
    if job.callback_id:
        callback = f"{job.callback_id} (times out {out.when(job.callback_timeout_at)})"
    return [
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
        ("created_at", out.when(job.created_at)),
        ("run_at", out.when(job.run_at)),
        ("attempted_at", out.when(job.attempted_at)),
        ("heartbeat_at", out.when(job.heartbeat_at)),
        ("deadline_at", out.when(job.deadline_at)),
        ("finalized_at", out.when(job.finalized_at)),
        ("progress", out.compact_json(job.progress) if job.progress is not None else "-"),
        ("callback", callback),
    ]


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
        fields.append(("dead-letter", f"{dead.reason} since {out.when(dead.dlq_at)}"))
    out.print_fields(f"job {job.id}", fields, session.stdout)
    out.print_line("", session.stdout)
    if job.errors:
        rows = (
            [
                str(r),
                str(e.attempt),
                out.when(e.at),
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
        fields += [(name, out.when(value)) for name, value in live.items() if "_at" in name]
        fields.append(
            ("progress", out.compact_json(job.progress) if job.progress is not None else "-")
        )
        fields.append(("callback_id", job.callback_id or "-"))
    out.print_fields(title, fields, session.stdout)
    if not errors:
        out.print_line("\nno error recorded for this attempt", session.stdout)
    for entry in errors:
        flag = " (terminal)" if entry.terminal else ""
        out.print_line(f"\nerror at {out.when(entry.at)}{flag}:\n{entry.error}", session.stdout)
        if entry.traceback:
            out.print_line(entry.traceback.rstrip(), session.stdout)


def job_cancel(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        try:
            job = client.cancel(args.id)
        except IllegalTransition as exc:
            raise NotCancellable(
                f"job {args.id} is {exc.state.value}: not cancellable (only"
                f" {', '.join(s.value for s in exc.allowed)} jobs are); nothing changed"
            ) from exc
    if args.json:
        out.print_json({"job": out.job_data(job)}, session.stdout)
    else:
        _print_job_line(session, "cancelled", job)


def job_retry(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        job = client.retry(args.id)
    if args.json:
        out.print_json({"job": out.job_data(job)}, session.stdout)
    else:
        _print_job_line(session, "retried", job)


# -- queue ------------------------------------------------------------------------------------


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


# -- dlq --------------------------------------------------------------------------------------


def dlq_list(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        entries = client.list_dlq(queue=args.queue, kind=args.kind, limit=args.limit)
    if args.json:
        out.print_json({"entries": [out.dlq_entry_data(e) for e in entries]}, session.stdout)
        return
    rows = (
        [
            str(e.job.id),
            e.job.kind,
            e.job.queue,
            e.reason,
            out.when(e.dlq_at),
            _attempts(e.job),
            str(e.job.run_lease),
            _last_error(e.job),
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
        try:
            job = client.retry_from_dlq(args.id)
        except JobNotFound:
            elsewhere = client.get_job(args.id)  # JobNotFound again when it is nowhere
            raise JobNotInDlq(
                f"job {args.id} is not in the dead-letter queue (it is {elsewhere.state.value});"
                f" `awa job retry {args.id}` retries failed and cancelled jobs"
            ) from None
    if args.json:
        out.print_json({"job": out.job_data(job)}, session.stdout)
    else:
        _print_job_line(session, "back from the dead-letter queue", job)


def dlq_retry_bulk(args: argparse.Namespace, session: Session) -> None:
    _require_filter(args, "retry")
    with session.client(args) as client:
        if args.all and args.queue is None and args.kind is None:
            count = _dlq_matching(client, None, None)
            _confirm(session, args, f"retry all {count} dead-letter entries in every queue")
        jobs = client.bulk_retry_from_dlq(queue=args.queue, kind=args.kind, all=args.all)
    if args.json:
        out.print_json(
            {"retried": len(jobs), "jobs": [out.job_data(j) for j in jobs]}, session.stdout
        )
        return
    out.print_line(
        f"retried {len(jobs)} dead-letter job(s) ({_filter_text(args.queue, args.kind)}) with a"
        " fresh attempt budget",
        session.stdout,
    )
    if jobs:
        out.print_table(None, _JOB_COLUMNS, _job_rows(jobs), session.stdout)


def dlq_purge(args: argparse.Namespace, session: Session) -> None:
    _require_filter(args, "purge")
    with session.client(args) as client:
        count = _dlq_matching(client, args.queue, args.kind)
        where = _filter_text(args.queue, args.kind)
        _confirm(session, args, f"permanently delete {count} dead-letter entries ({where})")
        purged = client.purge_dlq(queue=args.queue, kind=args.kind, all=args.all)
    if args.json:
        out.print_json({"purged": purged}, session.stdout)
    else:
        out.print_line(
            f"purged {purged} dead-letter entr{'y' if purged == 1 else 'ies'} ({where})",
            session.stdout,
        )


# -- callback ---------------------------------------------------------------------------------


def _resolved(args: argparse.Namespace, session: Session, verb: str, job: Job) -> None:
    if args.json:
        out.print_json({"callback_id": args.callback_id, "job": out.job_data(job)}, session.stdout)
    else:
        _print_job_line(session, f"callback {args.callback_id} {verb}", job)


def callback_complete(args: argparse.Namespace, session: Session) -> None:
    payload = _payload(args)
    with session.client(args) as client:
        job = client.complete_external(args.callback_id, payload)
    _resolved(args, session, "completed", job)


def callback_fail(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        job = client.fail_external(args.callback_id, args.error)
    _resolved(args, session, "failed", job)


def callback_resume(args: argparse.Namespace, session: Session) -> None:
    payload = _payload(args)
    with session.client(args) as client:
        job = client.resume_external(args.callback_id, payload)
    _resolved(args, session, "resumed", job)


def callback_retry(args: argparse.Namespace, session: Session) -> None:
    with session.client(args) as client:
        job = client.retry_external(args.callback_id)
    _resolved(args, session, "retried from scratch", job)


def callbacks_serve(args: argparse.Namespace, session: Session) -> None:
    import os

    secret_text = session.environ.get(args.secret_env) or os.environ.get(args.secret_env)
    if not secret_text and not args.allow_unsigned:
        raise Refused(
            f"no callback secret: set {args.secret_env} (or choose another variable with"
            " --secret-env), or pass --allow-unsigned on a trusted network"
        )
    try:
        import uvicorn

        from awa.http import create_app
    except ImportError as exc:
        raise Refused(
            f"the HTTP receiver needs the http extra (pip install 'awa[http]'): {exc}"
        ) from None
    url = database_url(args.database_url, session.environ)
    with open_store(url, pool_size=args.pool_size) as store:
        app = create_app(
            store,
            secret=secret_text.encode() if secret_text else None,
            allow_unsigned=args.allow_unsigned,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)


COMMANDS: dict[str, Command] = {
    "migrate": migrate,
    "job list": job_list,
    "job dump": job_dump,
    "job dump-run": job_dump_run,
    "job cancel": job_cancel,
    "job retry": job_retry,
    "queue pause": queue_pause,
    "queue resume": queue_resume,
    "queue stats": queue_stats,
    "dlq list": dlq_list,
    "dlq depth": dlq_depth,
    "dlq retry": dlq_retry,
    "dlq retry-bulk": dlq_retry_bulk,
    "dlq purge": dlq_purge,
    "callback complete": callback_complete,
    "callback fail": callback_fail,
    "callback resume": callback_resume,
    "callback retry": callback_retry,
    "callbacks serve": callbacks_serve,
}
