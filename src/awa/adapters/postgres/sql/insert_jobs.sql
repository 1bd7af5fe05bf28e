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
--   `i.*` is the job columns in order (`inserted` returns {job_columns}, insert_unique.sqlpart):
--   written out a third time, they would take the statement past 4 KB.
-- Index: jobs_unique_key_idx finds holders. A concurrent insert that commits a key after this
--   statement's snapshot makes it fail with unique_violation, nothing inserted: the caller
--   runs it again and then sees the holder. jobs_pkey (identity) assigns ids in request order.
WITH t AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), {part:new_job_arrays}, {part:new_jobs}, {part:insert_unique}
SELECT NULL::bigint AS blocked_ord, NULL::bigint AS repeat_of, i.*, w.queues
FROM inserted AS i CROSS JOIN woken AS w
UNION ALL
SELECT h.ord, NULL, {j.job_columns}, 0
FROM held AS h JOIN awa.jobs AS j ON j.id = h.id
UNION ALL
SELECT r.ord, r.first_ord, {j.job_columns}, 0
FROM repeated AS r LEFT JOIN awa.jobs AS j ON false
