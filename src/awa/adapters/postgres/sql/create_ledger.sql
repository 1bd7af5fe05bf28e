-- Purpose: create the awa schema and its schema-version ledger if this database has neither.
-- Parameters: none. Runs under migrate_lock.sql.
-- Transition: none. Index: none.
CREATE TABLE IF NOT EXISTS awa.schema_version (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
