-- Purpose: insert a batch of new jobs in request order and return them with their ids.
-- Parameters: now (timestamptz, NULL = the database clock), and one array per column, all the
--   same length: kind text[], queue text[], args text[] (JSON), priority int[],
--   max_attempts int[], run_at timestamptz[] (NULL = now), tags text[] (JSON arrays),
--   metadata text[] (JSON).
-- Transition: row 1 (∅ → available, or scheduled when run_at is after now); same rule as
--   awa.domain.decisions.create_job.
--   The wake-up NOTIFY (channel awa_wakeup, payload: the queue name) for each queue that got an
--   available job is sent by the uncorrelated scalar subquery, which PostgreSQL runs once: one
--   statement, so a single insert is one round trip. Delivered on commit, dropped on rollback.
-- Index: none read; jobs_pkey (identity) assigns ids in request order.
WITH inserted AS (
INSERT INTO awa.jobs (kind, queue, args, state, priority, max_attempts, run_at, created_at,
                      tags, metadata)
SELECT n.kind, n.queue, n.args::jsonb,
       CASE WHEN coalesce(n.run_at, t.now) > t.now THEN 'scheduled' ELSE 'available' END,
       n.priority, n.max_attempts, coalesce(n.run_at, t.now), t.now,
       ARRAY(SELECT jsonb_array_elements_text(n.tags::jsonb)), n.metadata::jsonb
FROM (SELECT coalesce(%(now)s::timestamptz, now()) AS now) AS t,
     unnest(%(kind)s::text[], %(queue)s::text[], %(args)s::text[], %(priority)s::int[],
            %(max_attempts)s::int[], %(run_at)s::timestamptz[], %(tags)s::text[],
            %(metadata)s::text[])
         WITH ORDINALITY AS n(kind, queue, args, priority, max_attempts, run_at, tags, metadata,
                              ord)
ORDER BY n.ord
RETURNING {job_columns}
)
SELECT i.*,
       (SELECT count(pg_notify('awa_wakeup', w.queue))
        FROM (SELECT DISTINCT queue FROM inserted WHERE state = 'available') AS w) AS woken
FROM inserted AS i
