"""The ``awa`` command line's grammar: a parser whose errors are one line, the options every
command accepts, and the helpers a command group builds its parser with.

A group module (``awa.cli.jobs``, ``awa.cli.dlq``, ...) has ``add_parser(commands)``: it adds
its group with ``group`` and each of its commands with ``command``, which names the function
that runs it. ``awa.cli.main`` then calls that function; it never lists commands itself.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, NoReturn, TypeAlias

from awa.domain import ValidationError
from awa.domain.validation import check_instant, shown

if TYPE_CHECKING:
    from awa.cli.session import Command

__all__ = [
    "Commands",
    "Parser",
    "UsageError",
    "add_run_at",
    "command",
    "common_options",
    "duration",
    "group",
    "instant",
    "job_id",
    "on_off",
    "port",
    "positive",
    "seconds",
]


class UsageError(Exception):
    """The command line was refused; ``main`` prints it as one line (it may quote a URL)."""


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the message and where to find help."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message} (see `{self.prog} --help`)")


#: where a group adds its commands (``add_subparsers`` of a ``Parser``)
Commands: TypeAlias = "argparse._SubParsersAction[Parser]"


def common_options(*, top: bool) -> Parser:
    """``--database-url`` and ``--json``, accepted before or after the command. On the
    subcommands they default to "not given" so they never overwrite the top-level value."""
    common = Parser(add_help=False)
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


#: the options every command takes after its name
_COMMAND_OPTIONS = common_options(top=False)


def group(commands: Commands, name: str, help: str) -> Commands:
    """``awa NAME COMMAND``: a group of commands."""
    sub = commands.add_parser(name, help=help, description=help)
    return sub.add_subparsers(dest="command", metavar="COMMAND", required=True)


def command(
    commands: Commands,
    name: str,
    help: str,
    run: Command,
    *,
    described: bool = True,
    common: bool = True,
) -> Parser:
    """A command run by ``run``, with the common options unless ``common`` is false (a
    command that neither opens a database of its own nor prints a result); its ``--help``
    repeats ``help`` as the description unless ``described`` is false."""
    parser = commands.add_parser(
        name,
        help=help,
        description=help if described else None,
        parents=[_COMMAND_OPTIONS] if common else [],
    )
    parser.set_defaults(run=run)
    return parser


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def port(text: str) -> int:
    value = positive(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port is from 1 to 65535, got {value}")
    return value


def job_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a job id is a whole number, got {text!r}") from None


_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _seconds(text: str, *, allow_zero: bool) -> float:
    number, unit = (text[:-1], text[-1]) if text[-1:] in _UNITS_S else (text, "s")
    try:
        value = float(number) * _UNITS_S[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a duration is seconds or a number with s, m, h or d (7d), got {text!r}"
        ) from None
    if not (value >= 0 if allow_zero else value > 0) or value == float("inf"):
        least = "0 or more" if allow_zero else "more than 0"
        raise argparse.ArgumentTypeError(f"a duration must be {least}, got {text!r}")
    return value


def duration(text: str) -> float:
    """A duration of more than 0: seconds (``90``), or a number with a unit, ``s``, ``m``,
    ``h`` or ``d`` (``15m``, ``12h``, ``7d``)."""
    return _seconds(text, allow_zero=False)


def seconds(text: str) -> float:
    """A duration like ``duration``'s, where 0 is allowed too (0: none)."""
    return _seconds(text, allow_zero=True)


def instant(text: str) -> datetime:
    """An ISO 8601 time with its UTC offset (``2030-01-01T03:00:00Z``, ``...+02:00``), within
    the bounds every store keeps: refused before anything is sent, as the store would."""
    written = text.strip()
    try:
        when = datetime.fromisoformat(written[:-1] + "+00:00" if written[-1:] in "Zz" else written)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a time is ISO 8601 with its offset (2030-01-01T03:00:00Z), got {shown(text)}"
        ) from None
    if when.utcoffset() is None:
        raise argparse.ArgumentTypeError(
            f"give the time's UTC offset (2030-01-01T03:00:00Z or ...+02:00), got {shown(text)}"
        )
    try:
        return check_instant("run_at", when)
    except ValidationError as refused:
        raise argparse.ArgumentTypeError(str(refused)) from None


def add_run_at(parser: argparse.ArgumentParser) -> None:
    """``--run-at`` for a retry: the job waits (``scheduled``) until then instead of running
    at once."""
    parser.add_argument(
        "--run-at",
        type=instant,
        metavar="TIME",
        help="run then, not now: ISO 8601 with its offset (2030-01-01T03:00:00Z)",
    )


def limit_or_none(text: str) -> int | None:
    """A whole number, or ``none`` (remove the limit); its range is the store's to check."""
    if text.strip().lower() == "none":
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or none, got {text!r}") from None


def rate_or_none(text: str) -> tuple[float, int] | None:
    """``PER_SECOND,BURST`` (``200,50``: 200 starts a second, 50 at once at most), or ``none``
    (remove the limit); the ranges are the store's to check."""
    written = text.strip().lower()
    if written == "none":
        return None
    per_second, comma, burst = written.partition(",")
    try:
        if comma:
            return float(per_second), int(burst)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(
        f"expected PER_SECOND,BURST (such as 200,50) or none, got {text!r}"
    )


def on_off(text: str) -> bool:
    """``on`` or ``off`` (also ``true``/``false``, ``yes``/``no``, ``1``/``0``)."""
    word = text.strip().lower()
    if word in ("on", "true", "yes", "1"):
        return True
    if word in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")
