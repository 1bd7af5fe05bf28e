"""``awa migrate``: create or upgrade the schema, or (``--sql``) print it for review."""

from __future__ import annotations

import argparse

from awa.cli import output as out
from awa.cli.arguments import Commands, command
from awa.cli.connect import open_store
from awa.cli.session import Session

__all__ = ["add_parser", "migrate"]


def add_parser(commands: Commands) -> None:
    p = command(commands, "migrate", "create or upgrade the awa schema", migrate, described=False)
    p.add_argument(
        "--sql", action="store_true", help="print the migration SQL for review; change nothing"
    )


def migrate(args: argparse.Namespace, session: Session) -> None:
    from awa.adapters.postgres import PostgresStore
    from awa.adapters.postgres.migrations import LATEST_VERSION, MIGRATIONS
    from awa.adapters.sqlite import LATEST_VERSION as SQLITE_LATEST_VERSION

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
