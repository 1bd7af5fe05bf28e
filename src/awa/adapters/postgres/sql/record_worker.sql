-- Purpose: record (or renew) one worker process: for each queue it works, the kinds it has
--   handlers for; and drop other workers' lapsed rows on the way, so dead workers' rows do
--   not pile up. The caller's own rows are left to the upsert (one statement cannot both
--   delete and update a row).
-- Parameters: now (timestamptz, NULL = the database clock), owner text, queues text[],
--   kinds text[] (one JSON array of kind names per queue, same order), ttl interval.
-- Transition: none (coordination).
-- Time: the statement's own (`clock_timestamp()`, once in `t`), and for a renewal the time
--   once its row is locked (`DO UPDATE`), not the start of a statement that waited.
-- Index: workers_pkey.
WITH {part:claim_now}, lapsed AS (
    DELETE FROM awa.workers
    WHERE expires_at <= (SELECT now FROM t) AND owner <> %(owner)s
)
INSERT INTO awa.workers AS w (owner, queue, kinds, expires_at)
SELECT %(owner)s, q.queue, ARRAY(SELECT jsonb_array_elements_text(q.kinds::jsonb)),
       t.now + %(ttl)s::interval
FROM t, unnest(%(queues)s::text[], %(kinds)s::text[]) AS q(queue, kinds)
ON CONFLICT (owner, queue) DO UPDATE
SET kinds = excluded.kinds,
    expires_at = coalesce(%(now)s::timestamptz, clock_timestamp()) + %(ttl)s::interval
