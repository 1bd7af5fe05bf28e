-- Purpose: hints committed after the last one this listener saw, by other stores.
-- Parameters: after (a hint id), origin (this store: it heard its own at commit).
SELECT id, kind, queue, job_id, run_lease FROM awa_hints
WHERE id > :after AND origin <> :origin
ORDER BY id
