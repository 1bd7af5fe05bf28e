-- Purpose: is this callback id already pending on some job? (a caller-chosen id must be new)
-- Parameters: callback_id text.
-- Transition: none (read only).
-- Index: jobs_callback_id_idx.
SELECT EXISTS (SELECT 1 FROM awa.jobs WHERE callback_id = %(callback_id)s)
