-- Purpose: insert_jobs.sql on a connection the caller holds (client.insert(..., conn=...)),
--   whatever its driver (psycopg, SQLAlchemy, Django, asyncpg) and whatever type loaders or
--   codecs it was set up with: the jobs come in as one JSON text, each inserted job goes back
--   as one JSON text, so nothing but text crosses the driver. Parameters are cast from text
--   first, so a driver that infers parameter types (asyncpg) sees text too.
-- Parameters: jobs text (a JSON array of {kind, queue, args, priority, max_attempts, run_at,
--   tags, metadata}, run_at an ISO timestamp or null), now text (ISO timestamp, NULL = the
--   database clock). Written with psycopg's named placeholders; caller_connections.py renders
--   the driver's own placeholders.
-- Transition: row 1, as insert_jobs.sql (same values as awa.domain.decisions.create_job), and
--   the same wake-up: one NOTIFY awa_wakeup per queue that got an available job, delivered on
--   the caller's commit and dropped on rollback; the uncorrelated scalar subquery runs once.
-- Index: none read; jobs_pkey (identity) assigns ids in request order.
WITH t AS (
    SELECT coalesce(CAST(CAST(%(now)s AS text) AS timestamptz), now()) AS now
), n AS (
    SELECT e.job->>'kind' AS kind, e.job->>'queue' AS queue, e.job->'args' AS args,
           CAST(e.job->>'priority' AS int) AS priority,
           CAST(e.job->>'max_attempts' AS int) AS max_attempts,
           CAST(e.job->>'run_at' AS timestamptz) AS run_at,
           ARRAY(SELECT jsonb_array_elements_text(e.job->'tags')) AS tags,
           e.job->'metadata' AS metadata, e.ord
    FROM jsonb_array_elements(CAST(CAST(%(jobs)s AS text) AS jsonb)) WITH ORDINALITY AS e(job, ord)
), inserted AS (
INSERT INTO awa.jobs (kind, queue, args, state, priority, max_attempts, run_at, created_at,
                      tags, metadata)
SELECT n.kind, n.queue, n.args,
       CASE WHEN coalesce(n.run_at, t.now) > t.now THEN 'scheduled' ELSE 'available' END,
       n.priority, n.max_attempts, coalesce(n.run_at, t.now), t.now, n.tags, n.metadata
FROM t, n
ORDER BY n.ord
RETURNING {job_columns}
)
SELECT CAST(to_jsonb(i) AS text) AS job,
       (SELECT count(pg_notify('awa_wakeup', w.queue))
        FROM (SELECT DISTINCT queue FROM inserted WHERE state = 'available') AS w) AS woken
FROM inserted AS i
ORDER BY i.id
