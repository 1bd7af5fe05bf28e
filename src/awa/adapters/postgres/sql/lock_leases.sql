-- Purpose: THE LEASE GUARD for every fenced write (heartbeat, finish, register_callback).
--   Locks and returns the jobs whose (id, run_lease) the caller still owns. A requested
--   lease with no row here is stale; nothing else in the write path compares leases, so this
--   statement alone decides ownership (the write-back runs on the rows locked here).
-- Parameters: now (timestamptz, NULL = the database clock), ids bigint[], leases bigint[]
--   (pairs: the attempts the caller claims to own).
-- Transition: none by itself; guards rows 4-10 and the state-keeping heartbeat and
--   register-callback moves. The state half of the guard is the domain's transition table,
--   asked on the locked row in the same transaction (adapters/_fencing.py): a move from a state
--   that is not live is refused there, as on every store.
-- Index: jobs_pkey. Rows are locked in id order so concurrent batches cannot deadlock.
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       g.run_lease AS requested_lease,
       coalesce(q.dlq_enabled, false) AS dlq_enabled,
       {j.job_columns}
FROM (SELECT DISTINCT g.id, g.run_lease
      FROM unnest(%(ids)s::bigint[], %(leases)s::bigint[]) AS g(id, run_lease)) AS g
JOIN awa.jobs AS j
  ON j.id = g.id
 AND j.run_lease = g.run_lease
LEFT JOIN awa.queues AS q ON q.queue = j.queue
ORDER BY j.id
FOR UPDATE OF j
