-- Purpose: serialise migrators: held until the migrating transaction ends.
-- Parameters: key bigint (awa.adapters.postgres.migrations.MIGRATION_LOCK_KEY).
-- Transition: none. Index: none.
SELECT pg_advisory_xact_lock(%(key)s)
