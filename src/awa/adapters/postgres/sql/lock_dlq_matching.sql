-- Purpose: lock every dead-letter entry matching the filters, in (dlq_at, id) order.
-- Parameters: now (timestamptz, NULL = the database clock), queue text, kind text (NULL = any;
--   the store refuses an empty filter unless all=True before running this).
-- Transition: first half of row 20 for many jobs (bulk retry).
-- Time: read after the locks ({part:time_after_locks}).
-- Index: dlq_queue_kind_idx (queue, kind, dlq_at, id) or dlq_at_idx when unfiltered.
WITH locked AS MATERIALIZED (
    SELECT {d.job_columns}, d.dlq_at AS dead_at
    FROM awa.dlq AS d
    WHERE (%(queue)s::text IS NULL OR d.queue = %(queue)s::text)
      AND (%(kind)s::text IS NULL OR d.kind = %(kind)s::text)
    ORDER BY d.dlq_at, d.id
    FOR UPDATE
), {part:time_after_locks}
SELECT t.now, {l.job_columns}
FROM t, locked AS l
ORDER BY l.dead_at, l.id
