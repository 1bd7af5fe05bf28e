-- Purpose: whether a callback id is still pending on some job.
-- Parameters: callback_id. Index: jobs_callback_id_idx.
SELECT EXISTS (SELECT 1 FROM awa_jobs WHERE callback_id = :callback_id)
