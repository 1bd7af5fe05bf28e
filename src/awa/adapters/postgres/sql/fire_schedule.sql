-- Purpose: fire a schedule: insert the jobs of a fire plan in the same statement that moves
--   the schedule's next fire on from the value the plan read (the compare-and-set).
-- Parameters: now (timestamptz, NULL = the database clock), name text, expected_next,
--   following, last_fire (timestamptz), and the arrays of new_jobs.sqlpart (one per fire).
-- Transition: row 1 for each job, only when the schedule is still at expected_next and not
--   paused (awa.domain.periodic.FirePlan). A concurrent fire of the same plan waits on the row
--   lock and then finds next_fire_at moved: it updates nothing and inserts nothing. A job
--   whose unique key is held is skipped (ON CONFLICT ... DO NOTHING), the fire still counts.
--   The one row `applied` says whether the compare-and-set won; the jobs follow it (NULL
--   columns when none was inserted). Wake-ups as in insert_jobs.sql.
-- Index: schedules_pkey; jobs_unique_key_idx arbitrates the ON CONFLICT (awa.jobs_hot's: the
--   new jobs are inserted into that partition, where every key holder lives).
WITH t AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), advanced AS (
    UPDATE awa.schedules AS s
    SET next_fire_at = %(following)s, last_fire_at = %(last_fire)s, updated_at = t.now
    FROM t
    WHERE s.name = %(name)s AND s.next_fire_at = %(expected_next)s AND NOT s.paused
    RETURNING s.name
), {part:new_job_arrays}, {part:new_jobs},
inserted AS (
    {part:insert_new_jobs}
    WHERE EXISTS (SELECT 1 FROM advanced)
    ORDER BY n.ord
    ON CONFLICT (unique_key)
        WHERE unique_key IS NOT NULL AND unique_states & awa.state_bit(state) <> 0
    DO NOTHING
    RETURNING {job_columns}
), woken AS (
    SELECT count(pg_notify('awa_wakeup', w.queue)) AS queues
    FROM (SELECT DISTINCT queue FROM inserted WHERE state = 'available') AS w
)
SELECT EXISTS (SELECT 1 FROM advanced) AS applied, {i.job_columns}, w.queues
FROM woken AS w LEFT JOIN inserted AS i ON true
