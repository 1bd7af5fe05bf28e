-- Purpose: lock_leases.sql for a batch of several jobs' requests, skipping a row another
--   transaction holds: the batch is written at once without it, and PostgresStore._fenced
--   retries the requests of each skipped job on their own (lock_leases.sql, bounded by
--   held_row_wait_s), so one held row delays only its own job's write. A skipped row is told
--   apart from a stale lease by its committed run_lease (lookup_leases.sql): still the
--   requested one, it may be owned, and only the retry that waits for it decides.
-- Parameters: now (timestamptz, NULL = the database clock), ids bigint[], leases bigint[].
-- Transition: none by itself; the same guard as lock_leases.sql ({part:owned_leases}).
-- Time: read after the locks ({part:time_after_locks}); SKIP LOCKED waits for no row, but a
--   table lock (a migration, `LOCK TABLE`) may still hold the statement back.
-- Index: jobs_pkey, in id order as lock_leases.sql.
WITH locked AS MATERIALIZED (
    {part:owned_leases}
    FOR UPDATE OF j SKIP LOCKED
), {part:time_after_locks}
SELECT t.now, l.*
FROM t, locked AS l
ORDER BY l.id
