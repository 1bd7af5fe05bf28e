"""What every ``awa`` command runs with: its streams and environment (the ``Session``), the way
to its database, and ``Refused`` for a command line it will not run as given.

A command is a function ``run(args, session)``: it prints its result (a table, or one JSON
document with ``--json``) or raises an ``AwaError`` or ``Refused``, which ``awa.cli.main``
turns into a one-line message and a non-zero exit. It may return an exit code of its own.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TextIO

import attrs

from awa.cli.connect import database_url, open_store
from awa.client import Client

__all__ = ["Command", "Refused", "Session"]


class Refused(Exception):
    """The command line asks for something the CLI will not do as given (exit code 2)."""


@attrs.define
class Session:
    """The command's world: its arguments' streams and environment, and a client once opened."""

    stdout: TextIO
    stderr: TextIO
    stdin: TextIO
    environ: Mapping[str, str]

    def database_url(self, args: argparse.Namespace) -> str:
        """``--database-url``, else the environment's (``awa.cli.connect.URL_ENV_VARS``)."""
        return database_url(args.database_url, self.environ)

    @contextmanager
    def client(self, args: argparse.Namespace) -> Iterator[Client]:
        with open_store(self.database_url(args)) as store:
            yield Client(store=store)


#: one command: prints its result or raises; ``None`` is exit code 0
Command = Callable[[argparse.Namespace, Session], "int | None"]
