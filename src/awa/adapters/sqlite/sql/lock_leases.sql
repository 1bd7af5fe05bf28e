-- Purpose: THE LEASE GUARD: the jobs whose (id, run_lease) is among the requested leases,
--   with their queue's dead-letter setting. A lease with no row here owns nothing.
-- Parameters: leases (JSON array of [id, run_lease] pairs).
-- Transition: none; the state half of the guard is the domain's (the transition table).
-- Index: the primary key, one lookup per pair (a row value IN a list: each job comes back
--   once however often its lease was asked for). The transaction holds the write lock
--   (BEGIN IMMEDIATE), so the rows stay as read until it commits.
SELECT {j.job_columns}, coalesce(q.dlq_enabled, 0)
FROM awa_jobs AS j LEFT JOIN awa_queues AS q ON q.queue = j.queue
WHERE (j.id, j.run_lease) IN (
    SELECT json_extract(l.value, '$[0]'), json_extract(l.value, '$[1]')
    FROM json_each(:leases) AS l)
