"""The ``awa`` command: operate a PostgreSQL awa installation from a shell.

``main(argv)`` parses the command line (argparse), runs the command and returns the exit code:

* ``0`` success;
* ``1`` the operation failed: any ``awa.AwaError`` (unknown job or callback id, a job that is
  not cancellable, no database, schema not migrated), printed as one line on stderr;
* ``2`` the command line was refused: bad arguments, a bulk command without a filter, a
  destructive command not confirmed;
* ``130`` interrupted.

Unexpected exceptions (bugs) keep their traceback. An error line is shown like any other user
data: control characters escaped, and no database password in it, even one a driver quotes
back from a malformed URL (``awa.redaction``).

Each command group is a module with ``add_parser(commands)`` (``awa.cli.arguments``) that adds
its commands and the functions that run them; ``GROUPS`` lists them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TextIO

from awa.cli import callbacks, cron, dlq, jobs, migrate, queues, simulate, ui, worker
from awa.cli.arguments import Parser, UsageError, common_options
from awa.cli.connect import URL_ENV_VARS
from awa.cli.output import printable
from awa.cli.session import Refused, Session
from awa.domain import AwaError
from awa.redaction import redact

__all__ = ["GROUPS", "build_parser", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_INTERRUPTED = 130

#: the command groups, in ``awa --help`` order: a new group is one more module here
GROUPS = (migrate, worker, simulate, jobs, queues, dlq, cron, callbacks, ui)


def build_parser() -> Parser:
    parser = Parser(
        prog="awa",
        description="Operate awa background jobs on PostgreSQL.",
        parents=[common_options(top=True)],
    )
    commands = parser.add_subparsers(dest="group", metavar="COMMAND", required=True)
    for group in GROUPS:
        group.add_parser(commands)
    return parser


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
    redacted = redact(message, urls)
    return printable(" ".join(part.strip() for part in redacted.splitlines() if part.strip()))


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the ``awa`` command line; returns the exit code."""
    err = stderr or sys.stderr
    words = list(sys.argv[1:] if argv is None else argv)
    environ = os.environ
    urls = [*_given_urls(words), *(environ.get(name) for name in URL_ENV_VARS)]
    try:
        args = build_parser().parse_args(words)
    except UsageError as exc:
        err.write(_shown(str(exc), urls) + "\n")
        return EXIT_REFUSED
    session = Session(
        stdout=stdout or sys.stdout, stderr=err, stdin=stdin or sys.stdin, environ=environ
    )
    try:
        code: int | None = args.run(args, session)
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
    return EXIT_OK if code is None else code
