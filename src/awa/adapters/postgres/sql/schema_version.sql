-- Purpose: the newest migration applied to this database (NULL when the ledger is empty).
-- Parameters: none. Fails with undefined_table when the database was never migrated.
-- Transition: none. Index: schema_version_pkey.
SELECT max(version) FROM awa.schema_version
