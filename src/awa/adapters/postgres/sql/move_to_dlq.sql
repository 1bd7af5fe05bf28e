-- Purpose: move failed jobs (already written back) from awa.jobs into awa.dlq.
-- Parameters: now (timestamptz, the transaction's decided time), ids bigint[],
--   reasons text[] (same length).
-- Transition: row 19 (failed → DLQ); a job is in exactly one home afterwards.
-- Index: jobs_pkey; dlq_pkey on insert. Rows were locked earlier in the transaction.
WITH moved AS (
    DELETE FROM awa.jobs AS j
    USING unnest(%(ids)s::bigint[], %(reasons)s::text[]) AS m(id, reason)
    WHERE j.id = m.id AND j.state = 'failed'
    RETURNING j.*, m.reason
)
INSERT INTO awa.dlq ({job_columns}, dlq_reason, dlq_at)
SELECT {job_columns},
       reason, %(now)s::timestamptz
FROM moved
