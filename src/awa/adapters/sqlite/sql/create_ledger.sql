-- Purpose: the migration ledger, created before any migration runs.
-- Parameters: none. Transition: none.
CREATE TABLE IF NOT EXISTS awa_schema_version (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    checksum   TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
)
