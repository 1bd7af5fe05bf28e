"""``awa simulate``: the seeded fault simulator (``awa.testing.simulation``), no database."""

from __future__ import annotations

import argparse

from awa.cli.arguments import Commands
from awa.cli.session import Session
from awa.testing.simulation.cli import add_arguments, run_from_args

__all__ = ["add_parser", "simulate"]


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "simulate",
        help="run the runtime in a seeded world of faults (no database needed)",
        description="Run awa's real worker code over the in-memory store under seeded"
        " crashes, stalls, hangs and late finishes, and check the lifecycle's laws.",
    )
    add_arguments(parser)
    parser.set_defaults(run=simulate)


def simulate(args: argparse.Namespace, session: Session) -> int:
    """The simulator prints its own report and says its own exit code."""
    return run_from_args(args)
