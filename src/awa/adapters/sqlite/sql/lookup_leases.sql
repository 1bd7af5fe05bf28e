-- Purpose: (run_lease, state) of jobs whose write was refused, to say why they were stale.
-- Parameters: ids (JSON array). Transition: none.
SELECT id, run_lease, state FROM awa_jobs WHERE id IN (SELECT value FROM json_each(:ids))
