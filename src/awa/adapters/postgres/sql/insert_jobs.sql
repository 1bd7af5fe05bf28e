-- Purpose: insert a batch of new jobs in request order and return them with their ids; a job
--   whose unique key a job holds, or an earlier job of the batch takes, is not inserted.
-- Parameters: now (timestamptz, NULL = the database clock), the arrays of new_jobs.sqlpart,
--   skip_held boolean: false inserts nothing at all when any job is blocked
--   (awa.domain.unique.refuse_blocked), true inserts the others; and may_repeat boolean:
--   whether two jobs of the batch share a digest (only then can they share a key, and only
--   then is `repeated` worth its sort).
-- Transition: row 1 (∅ → available, or scheduled when run_at is after now); same rule as
--   awa.domain.decisions.create_job, unique keys as awa.domain.unique.blocked_inserts.
--   Rows: the inserted jobs with blocked_ord NULL (ids in request order), then one row per
--   blocked request: its 1-based blocked_ord with the holder's columns, or with repeat_of
--   (the ord of the earlier request taking the key) and NULL columns.
--   The wake-up NOTIFY (channel awa_wakeup, payload: the queue name) for each queue that got an
--   available job is sent by the `woken` CTE, which PostgreSQL runs once: one statement, so a
--   single insert is one round trip. Delivered on commit, dropped on rollback.
-- Index: jobs_unique_key_idx finds holders. A concurrent insert that commits a key after this
--   statement's snapshot makes it fail with unique_violation, nothing inserted: the caller
--   runs it again and then sees the holder. jobs_pkey (identity) assigns ids in request order.
WITH t AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), {part:new_jobs},
held AS (
    SELECT DISTINCT ON (n.ord) n.ord, j.id
    FROM n
    JOIN awa.jobs AS j
      ON j.unique_key = n.unique_key AND j.unique_states & awa.state_bit(j.state) <> 0
    ORDER BY n.ord, j.id
), repeated AS (
    SELECT k.ord, k.first_ord
    FROM (SELECT n.ord, min(n.ord) OVER (PARTITION BY n.unique_key) AS first_ord
          FROM n
          WHERE %(may_repeat)s
            AND n.unique_key IS NOT NULL
            AND n.ord NOT IN (SELECT ord FROM held)) AS k
    WHERE k.first_ord < k.ord
), inserted AS (
    {part:insert_new_jobs}
    WHERE n.ord NOT IN (SELECT ord FROM held)
      AND n.ord NOT IN (SELECT ord FROM repeated)
      AND (%(skip_held)s OR NOT EXISTS (SELECT 1 FROM held UNION ALL SELECT 1 FROM repeated))
    ORDER BY n.ord
    RETURNING {job_columns}
), woken AS (
    SELECT count(pg_notify('awa_wakeup', w.queue)) AS queues
    FROM (SELECT DISTINCT queue FROM inserted WHERE state = 'available') AS w
)
SELECT NULL::bigint AS blocked_ord, NULL::bigint AS repeat_of, {i.job_columns}, w.queues
FROM inserted AS i CROSS JOIN woken AS w
UNION ALL
SELECT h.ord, NULL, {j.job_columns}, 0
FROM held AS h JOIN awa.jobs AS j ON j.id = h.id
UNION ALL
SELECT r.ord, r.first_ord, {j.job_columns}, 0
FROM repeated AS r LEFT JOIN awa.jobs AS j ON false
