-- Purpose: THE LEASE GUARD for every fenced write (heartbeat, finish, register_callback), for
--   one job's requests (or when the rows must be waited for): locks and returns the jobs whose
--   (id, run_lease) the caller still owns ({part:owned_leases}), waiting for a row another
--   transaction holds. A requested lease with no row here is stale; nothing else in the write
--   path compares leases, so this statement (or lock_free_leases.sql, the same guard) alone
--   decides ownership (the write-back runs on the rows locked here).
-- Parameters: now (timestamptz, NULL = the database clock), ids bigint[], leases bigint[].
-- Transition: none by itself; guards rows 4-10 and the state-keeping heartbeat and
--   register-callback moves. The state half of the guard is the domain's transition table,
--   asked on the locked row in the same transaction (adapters/_fencing.py): a move from a state
--   that is not live is refused there, as on every store.
-- Time: read after the locks ({part:time_after_locks}): a heartbeat that waited for its row
--   stamps the time it was written, not the time it began waiting.
-- Index: jobs_pkey. Rows are locked in id order so concurrent batches cannot deadlock.
WITH locked AS MATERIALIZED (
    {part:owned_leases}
    FOR UPDATE OF j
), {part:time_after_locks}
SELECT t.now, l.*
FROM t, locked AS l
ORDER BY l.id
