"""The ``awa`` command: operate a PostgreSQL awa installation from a shell.

``main(argv)`` parses the command line (argparse), runs one command from
``awa.cli.commands`` and returns the exit code:

* ``0`` success;
* ``1`` the operation failed: any ``awa.AwaError`` (unknown job or callback id, a job that is
  not cancellable, no database, schema not migrated), printed as one line on stderr;
* ``2`` the command line was refused: bad arguments, a bulk command without a filter, a
  destructive command not confirmed;
* ``130`` interrupted.

Unexpected exceptions (bugs) keep their traceback. An error line is shown like any other user
data: control characters escaped, and no database password in it, even one a driver quotes
back from a malformed URL (``awa.redaction``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from awa.cli.connect import URL_ENV_VARS
from awa.cli.output import printable
from awa.domain import AwaError, JobState
from awa.domain.defaults import FAILED_BY_CALLBACK
from awa.redaction import redact
from awa.testing.simulation.cli import add_arguments as simulation_arguments

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_INTERRUPTED = 130


class _UsageError(Exception):
    """The command line was refused; ``main`` prints it as one line (it may quote a URL)."""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the message and where to find help."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: error: {message} (see `{self.prog} --help`)")


def _common_options(*, top: bool) -> _Parser:
    """``--database-url`` and ``--json``, accepted before or after the command. On the
    subcommands they default to "not given" so they never overwrite the top-level value."""
    common = _Parser(add_help=False)
    default_url = None if top else argparse.SUPPRESS
    default_json = False if top else argparse.SUPPRESS
    common.add_argument(
        "--database-url",
        metavar="URL",
        default=default_url,
        help="PostgreSQL URL (default: $AWA_DATABASE_URL, then $DATABASE_URL)",
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=default_json,
        help="print one JSON document instead of tables",
    )
    return common


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _job_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a job id is a whole number, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    common = _common_options(top=False)
    parser = _Parser(
        prog="awa",
        description="Operate awa background jobs on PostgreSQL.",
        parents=[_common_options(top=True)],
    )
    groups = parser.add_subparsers(dest="group", metavar="COMMAND", required=True)

    def group(name: str, help: str) -> argparse._SubParsersAction[_Parser]:
        sub = groups.add_parser(name, help=help, description=help)
        return sub.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(
        parent: argparse._SubParsersAction[_Parser], name: str, help: str
    ) -> argparse.ArgumentParser:
        return parent.add_parser(name, help=help, description=help, parents=[common])

    migrate = groups.add_parser(
        "migrate", help="create or upgrade the awa schema", parents=[common]
    )
    migrate.add_argument(
        "--sql", action="store_true", help="print the migration SQL for review; change nothing"
    )

    simulate = groups.add_parser(
        "simulate",
        help="run the runtime in a seeded world of faults (no database needed)",
        description="Run awa's real worker code over the in-memory store under seeded"
        " crashes, stalls, hangs and late finishes, and check the lifecycle's laws.",
    )
    simulation_arguments(simulate)

    job = group("job", "inspect and act on single jobs")
    p = command(job, "list", "list jobs (outside the dead-letter queue), oldest first")
    p.add_argument("--state", choices=[s.value for s in JobState])
    p.add_argument("--kind")
    p.add_argument("--queue")
    p.add_argument("--limit", type=_positive, default=100)
    p = command(job, "dump", "the whole job, its error history attempt by attempt, a diagnosis")
    p.add_argument("id", type=_job_id)
    p = command(job, "dump-run", "one attempt of a job: its errors with tracebacks, live fields")
    p.add_argument("id", type=_job_id)
    p.add_argument("--attempt", type=_positive, help="attempt number (default: the latest)")
    p = command(job, "cancel", "cancel a job; a running handler is signalled to stop")
    p.add_argument("id", type=_job_id)
    p = command(job, "retry", "run a failed or cancelled job again with a fresh attempt budget")
    p.add_argument("id", type=_job_id)

    queue = group("queue", "pause, resume and inspect queues")
    p = command(queue, "pause", "stop claims on a queue (running attempts go on)")
    p.add_argument("queue")
    p = command(queue, "resume", "let workers claim from a paused queue again")
    p.add_argument("queue")
    p = command(queue, "stats", "per queue: jobs per state, DLQ depth, oldest available, paused")
    p.add_argument("--queue", help="only this queue")

    dlq = group("dlq", "the dead-letter queue: failed jobs kept for inspection and redrive")
    p = command(dlq, "list", "dead-letter entries, oldest first")
    p.add_argument("--queue")
    p.add_argument("--kind")
    p.add_argument("--limit", type=_positive, default=100)
    p = command(dlq, "depth", "how many entries each queue holds")
    p.add_argument("--queue", help="only this queue")
    p = command(dlq, "retry", "move one entry back to available with a fresh attempt budget")
    p.add_argument("id", type=_job_id)
    for name, verb, helptext in (
        ("retry-bulk", "retry", "retry every matching entry with a fresh attempt budget"),
        ("purge", "delete", "delete matching entries for good"),
    ):
        p = command(dlq, name, helptext)
        p.add_argument("--queue")
        p.add_argument("--kind")
        p.add_argument("--all", action="store_true", help=f"{verb} entries of every queue and kind")
        p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")

    callback = group("callback", "answer a job's pending callback from the command line")
    p = command(callback, "complete", "complete the waiting job")
    p.add_argument("callback_id")
    p.add_argument("--payload", metavar="JSON", help="result stored on the job")
    p = command(callback, "fail", "fail the waiting job")
    p.add_argument("callback_id")
    p.add_argument("--error", default=FAILED_BY_CALLBACK, help="error message recorded")
    p = command(callback, "resume", "hand a payload to the still-waiting handler")
    p.add_argument("callback_id")
    p.add_argument("--payload", metavar="JSON", help="what the handler receives")
    p = command(callback, "retry", "start the job again from scratch (attempt reset)")
    p.add_argument("callback_id")

    callbacks = group("callbacks", "the HTTP callback receiver")
    p = command(callbacks, "serve", "serve signed callback requests over HTTP (uvicorn)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument(
        "--secret-env",
        default="AWA_CALLBACK_SECRET",
        metavar="VAR",
        help="environment variable holding the HMAC secret (default: AWA_CALLBACK_SECRET)",
    )
    p.add_argument(
        "--allow-unsigned", action="store_true", help="accept unsigned requests (trusted networks)"
    )
    p.add_argument("--pool-size", type=_positive, default=10, help="database connections")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


def _given_urls(argv: Sequence[str]) -> list[str]:
    """The ``--database-url`` values on a command line, parsed or not."""
    urls: list[str] = []
    for index, word in enumerate(argv):
        if word == "--database-url" and index + 1 < len(argv):
            urls.append(argv[index + 1])
        elif word.startswith("--database-url="):
            urls.append(word.partition("=")[2])
    return urls


def _shown(message: str, urls: Sequence[str | None]) -> str:
    """An error message as one safe line: passwords of ``urls`` (and of any URL in it)
    redacted, control characters escaped."""
    return printable(_one_line(redact(message, urls)))


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the ``awa`` command line; returns the exit code."""
    from awa.cli.commands import COMMANDS, Refused, Session

    err = stderr or sys.stderr
    words = list(sys.argv[1:] if argv is None else argv)
    environ = os.environ
    urls = [*_given_urls(words), *(environ.get(name) for name in URL_ENV_VARS)]
    try:
        args = build_parser().parse_args(words)
    except _UsageError as exc:
        err.write(_shown(str(exc), urls) + "\n")
        return EXIT_REFUSED
    if args.group == "simulate":
        from awa.testing.simulation.cli import run_from_args

        return run_from_args(args)
    name = args.group if args.group == "migrate" else f"{args.group} {args.command}"
    session = Session(
        stdout=stdout or sys.stdout, stderr=err, stdin=stdin or sys.stdin, environ=environ
    )
    try:
        COMMANDS[name](args, session)
    except AwaError as exc:
        err.write(f"awa: error: {_shown(str(exc), urls) or type(exc).__name__}\n")
        return EXIT_FAILED
    except Refused as exc:
        err.write(f"awa: refused: {_shown(str(exc), urls)}\n")
        return EXIT_REFUSED
    except KeyboardInterrupt:
        err.write("awa: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `awa job list | head`: the reader left, which is fine
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return EXIT_OK
    return EXIT_OK
