"""What keeps a bulk or destructive command from doing more than was meant: a filter (or an
explicit ``--all``), and a confirmation on a terminal (or ``--yes``)."""

from __future__ import annotations

import argparse

from awa.cli.session import Refused, Session
from awa.escaping import printable
from awa.ports.checks import refuse_unfiltered

__all__ = ["add_filter_options", "confirm", "require_filter"]


def add_filter_options(parser: argparse.ArgumentParser, verb: str, what: str) -> None:
    """``--queue``, ``--kind``, ``--all`` and ``--yes`` for a bulk command."""
    parser.add_argument("--queue")
    parser.add_argument("--kind")
    parser.add_argument("--all", action="store_true", help=f"{verb} {what} of every queue and kind")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


def require_filter(args: argparse.Namespace, verb: str, what: str) -> None:
    """A bulk command acts on a queue, a kind, or (only when asked) everything."""
    how = "give --queue and/or --kind, or --all"
    refuse_unfiltered(args.queue, args.kind, args.all, verb=verb, what=what, how=how, error=Refused)


def confirm(session: Session, args: argparse.Namespace, action: str) -> None:
    """Ask whether to ``action`` on a terminal; without one, only ``--yes`` lets it go on."""
    if args.yes:
        return
    if not session.stdin.isatty():
        raise Refused(f"refusing to {action} without --yes: stdin is not a terminal")
    session.stderr.write(f"{printable(action)}? [y/N] ")
    session.stderr.flush()
    answer = session.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise Refused("not confirmed; nothing changed")
