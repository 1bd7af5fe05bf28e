-- Purpose: retention: delete up to `limit` dead-letter entries that entered the DLQ before
--   now - older_than; the row count is the answer.
-- Parameters: now (timestamptz, NULL = the database clock), older_than interval, limit int.
-- Transition: row 21 (DLQ → ∅) by retention.
-- Index: dlq_at_idx (dlq_at, id). Bounded by LIMIT; SKIP LOCKED so it never waits on a DLQ
--   retry holding an entry.
WITH t AS (
    SELECT coalesce(%(now)s::timestamptz, now()) - %(older_than)s::interval AS cutoff
), expired AS (
    SELECT d.id
    FROM awa.dlq AS d, t
    WHERE d.dlq_at < t.cutoff
    ORDER BY d.dlq_at, d.id
    LIMIT %(limit)s
    FOR UPDATE OF d SKIP LOCKED
)
DELETE FROM awa.dlq AS d
USING expired
WHERE d.id = expired.id
