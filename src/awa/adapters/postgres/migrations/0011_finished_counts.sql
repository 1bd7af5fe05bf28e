-- Migration 0011: count finished jobs without reading every one of them.
--
-- The queue summary (count_queue_states.sql) counted every job of awa.jobs once per interval:
-- a scan of jobs_done, which holds a day of finished jobs under the default retention. At
-- 3,500 jobs/s that count grew from 1 s to 3.8 s within the hour (two parallel workers, both
-- cores of the test machine), and it grows with the retention window, not with the work in
-- progress. Now the summary reads jobs_done through this index: the (queue, state) groups by
-- skipping from one to the next, each group counted exactly up to a bound, and a group past
-- the bound estimated by the planner (awa.finished_estimate), the way PostgreSQL sizes a
-- relation: the row density of the last ANALYZE times the pages the partition has now.
--
-- Keys repeat (a queue's completed jobs share one), so the index deduplicates to a few bytes
-- a job. A finished job is written to it once, when it moves to jobs_done.
--
-- The index is built under a SHARE lock on jobs_done: jobs finishing wait for the build (see
-- docs/postgres.md, "Upgrading to 0011", for its time per million finished jobs).

CREATE INDEX jobs_done_queue_state_idx ON awa.jobs_done (queue, state);

-- the combined frequencies of (queue, state), so that an estimate of one group does not
-- multiply the queue's share by the state's as if they were independent
CREATE STATISTICS awa.jobs_done_queue_state (mcv) ON queue, state FROM awa.jobs_done;

-- How many finished jobs of one queue and state jobs_done holds, as the planner estimates a
-- scan for them: no row is read. VOLATILE, the default, because PostgreSQL runs EXPLAIN only
-- in a volatile function.
CREATE FUNCTION awa.finished_estimate(queue text, state text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE format(
        'EXPLAIN (FORMAT JSON) SELECT 1 FROM awa.jobs_done WHERE queue = %L AND state = %L',
        queue, state
    ) INTO plan;
    RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
END
$$;
