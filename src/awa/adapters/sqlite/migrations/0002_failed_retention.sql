-- Migration 0002: failed and cancelled jobs have a retention of their own.
--
-- A failed job outside the dead-letter queue (the default) is the only copy of its payload
-- and errors; it is kept for failed_retention_us, completed jobs for finished_retention_us
-- (awa.domain.retention). NULL: the maintenance leader's default applies.
--
-- Each retention is deleted in (finalized_at, id) order through an index of its own states:
-- through one index of every finished job, deleting the completed jobs past a day would step
-- over each failed one kept for the week, on every pass.
ALTER TABLE awa_queues ADD COLUMN failed_retention_us INTEGER CHECK (failed_retention_us > 0);

DROP INDEX jobs_finished_idx;
-- delete_completed.sql
CREATE INDEX jobs_completed_idx ON awa_jobs (finalized_at, id) WHERE state = 'completed';
-- delete_failed.sql
CREATE INDEX jobs_failed_idx ON awa_jobs (finalized_at, id)
    WHERE state IN ('failed', 'cancelled');
