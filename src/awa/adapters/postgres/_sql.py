"""The adapter's SQL: one statement per ``sql/*.sql`` file, read once at import.

Each file starts with a comment saying its purpose, parameters, the lifecycle transition it
carries out and the index it relies on. Values are always bound (``%(name)s``), never formatted
into the text.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["SQL", "load_statements"]


def load_statements() -> dict[str, str]:
    """Every statement by file name (without ``.sql``)."""
    folder = resources.files("awa.adapters.postgres") / "sql"
    return {
        entry.name.removesuffix(".sql"): entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    }


SQL = load_statements()
