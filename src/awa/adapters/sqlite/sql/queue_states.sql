-- Purpose: job counts of every queue by state, with each queue's oldest available run_at.
-- Parameters: none.
SELECT queue, state, count(*),
       min(CASE WHEN state = 'available' THEN run_at END)
FROM awa_jobs
GROUP BY queue, state
