-- Purpose: copy a (failed) job into the dead-letter queue with its reason and time; the
--   caller deletes it from awa_jobs next (delete_job.sql), in the same transaction.
-- Parameters: id, reason, now (us). Transition: rows 9 to 11 and 18 (into the DLQ).
INSERT INTO awa_dlq ({job_columns}, dlq_reason, dlq_at)
SELECT {job_columns}, :reason, :now FROM awa_jobs WHERE id = :id
