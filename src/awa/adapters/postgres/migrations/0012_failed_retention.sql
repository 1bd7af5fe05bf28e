-- Migration 0012: failed and cancelled jobs have a retention of their own.
--
-- A failed job outside the dead-letter queue (the default) is the only copy of its payload
-- and errors; it is kept for failed_retention, completed jobs for finished_retention
-- (awa.domain.retention). NULL: the maintenance leader's RuntimeConfig default applies
-- (failed_retention_s, 7 days, against finished_retention_s, 1 day).
--
-- Each retention is deleted in (finalized_at, id) order through an index of its own states
-- (delete_completed.sql, delete_failed.sql). Through jobs_finished_idx, which holds every
-- finished job, deleting the completed jobs past their day would step over each failed one
-- kept for its week, on every pass. The two indexes replace it: each finished job is still
-- written to one index of this kind, and the queue summary counts the jobs that ended within
-- its window through both (count_finished_states.sql).
--
-- The indexes are built under a SHARE lock on each partition: jobs finishing wait for the
-- build (docs/postgres.md, "Upgrading to 0012").

ALTER TABLE awa.queues
    ADD COLUMN failed_retention interval,
    ADD CONSTRAINT queues_failed_retention_positive
        CHECK (failed_retention IS NULL OR failed_retention > interval '0');

-- named per partition, as in 0010, and attached to one index on awa.jobs each
CREATE INDEX jobs_hot_completed_idx ON awa.jobs_hot (finalized_at, id)
    WHERE state = 'completed';
CREATE INDEX jobs_done_completed_idx ON awa.jobs_done (finalized_at, id)
    WHERE state = 'completed';
CREATE INDEX jobs_completed_idx ON awa.jobs (finalized_at, id)
    WHERE state = 'completed';

CREATE INDEX jobs_hot_failed_idx ON awa.jobs_hot (finalized_at, id)
    WHERE state IN ('failed', 'cancelled');
CREATE INDEX jobs_done_failed_idx ON awa.jobs_done (finalized_at, id)
    WHERE state IN ('failed', 'cancelled');
CREATE INDEX jobs_failed_idx ON awa.jobs (finalized_at, id)
    WHERE state IN ('failed', 'cancelled');

DROP INDEX awa.jobs_finished_idx;
