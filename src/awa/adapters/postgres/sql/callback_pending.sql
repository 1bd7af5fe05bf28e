-- Purpose: is this callback id already pending on some job? (a caller-chosen id must be new)
-- Parameters: callback_id text.
-- Transition: none (read only).
-- Index: jobs_callback_id_idx, awa.jobs_hot's (as lock_callback.sql).
SELECT EXISTS (SELECT 1 FROM awa.jobs_hot WHERE callback_id = %(callback_id)s)
