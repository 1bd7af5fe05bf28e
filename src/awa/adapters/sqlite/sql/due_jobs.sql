-- Purpose: scheduled and retryable jobs whose run_at has come, in (run_at, id) order.
-- Parameters: now (us), limit. Transition: row 2 follows, in the domain.
-- Index: jobs_due_idx.
SELECT {job_columns} FROM awa_jobs
WHERE state IN ('scheduled', 'retryable') AND run_at <= :now
ORDER BY run_at, id
LIMIT :limit
