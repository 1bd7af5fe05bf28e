-- Purpose: remove one dead-letter entry (its job comes back, insert_job.sql, or is purged).
-- Parameters: id. Transition: row 20 (out of the DLQ), or a purge.
DELETE FROM awa_dlq WHERE id = :id
