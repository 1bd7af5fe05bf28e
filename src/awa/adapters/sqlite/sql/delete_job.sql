-- Purpose: remove one job from awa_jobs (it moved to the dead-letter queue).
-- Parameters: id. Transition: the second half of copy_to_dlq.sql.
DELETE FROM awa_jobs WHERE id = :id
