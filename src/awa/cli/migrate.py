"""``awa migrate``: create or upgrade the schema, or (``--sql``) print it for review."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from awa.cli import output as out
from awa.cli.arguments import Commands, command
from awa.cli.connect import open_store
from awa.cli.session import Session
from awa.domain import DatabaseError

if TYPE_CHECKING:
    from awa.adapters._schema import Migration

__all__ = ["add_parser", "migrate", "print_sql"]


def add_parser(commands: Commands) -> None:
    p = command(commands, "migrate", "create or upgrade the awa schema", migrate, described=False)
    p.add_argument(
        "--sql", action="store_true", help="print the migration SQL for review; change nothing"
    )


_HEADERS = {
    "postgresql": (
        "-- awa migrations, in order. `awa migrate` runs the pending ones in one transaction\n"
        "-- under an advisory lock, after CREATE SCHEMA IF NOT EXISTS awa and the version\n"
        "-- ledger awa.schema_version, and records each version it applies there.\n"
    ),
    "sqlite": (
        "-- awa migrations for SQLite, in order. `awa migrate` runs the pending ones in one\n"
        "-- BEGIN IMMEDIATE transaction, after creating the version ledger awa_schema_version,\n"
        "-- and records each version it applies there.\n"
    ),
}


def _migrations_for(url: str | None) -> tuple[str, tuple[Migration, ...]]:
    """The migrations of the store ``url`` names (PostgreSQL's when no URL is given)."""
    if url is not None and url.startswith("sqlite:"):
        from awa.adapters.sqlite.migrations import MIGRATIONS as SQLITE_MIGRATIONS

        return "sqlite", SQLITE_MIGRATIONS
    from awa.adapters.postgres.migrations import MIGRATIONS

    return "postgresql", MIGRATIONS


def _given_url(args: argparse.Namespace, session: Session) -> str | None:
    """The URL ``--sql`` prints for, if any: it needs no database, so none is required."""
    try:
        return session.database_url(args)
    except DatabaseError:  # no URL given anywhere
        return None


def print_sql(args: argparse.Namespace, session: Session) -> None:
    """``--sql``: every migration of the URL's store, as text to review (or JSON)."""
    store, migrations = _migrations_for(_given_url(args, session))
    if args.json:
        document = [
            {"version": m.version, "name": m.name, "checksum": m.checksum, "sql": m.sql}
            for m in migrations
        ]
        out.print_json({"store": store, "migrations": document}, session.stdout)
        return
    session.stdout.write(_HEADERS[store])
    for m in migrations:
        session.stdout.write(
            f"\n-- ===== migration {m.version:04d}_{m.name} (sha256 {m.checksum}) =====\n"
        )
        session.stdout.write(m.sql if m.sql.endswith("\n") else m.sql + "\n")


def migrate(args: argparse.Namespace, session: Session) -> None:
    from awa.adapters.postgres import PostgresStore
    from awa.adapters.postgres.migrations import LATEST_VERSION
    from awa.adapters.sqlite import LATEST_VERSION as SQLITE_LATEST_VERSION

    if args.sql:
        print_sql(args, session)
        return
    # check_now: the store migrates on a pool connection without its first-call check
    with open_store(session.database_url(args), check_now=True, migrating=True) as store:
        applied = store.migrate()
        latest = LATEST_VERSION if isinstance(store, PostgresStore) else SQLITE_LATEST_VERSION
    if args.json:
        out.print_json({"applied": applied, "version": latest}, session.stdout)
    elif applied:
        versions = ", ".join(str(v) for v in applied)
        out.print_line(
            f"applied migration(s) {versions}; schema at version {latest}", session.stdout
        )
    else:
        out.print_line(f"nothing to do; schema already at version {latest}", session.stdout)
