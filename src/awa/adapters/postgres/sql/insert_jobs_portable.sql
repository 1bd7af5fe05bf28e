-- Purpose: insert_jobs.sql on a connection the caller holds (client.insert(..., conn=...)),
--   whatever its driver (psycopg, SQLAlchemy, Django, asyncpg) and whatever type loaders or
--   codecs it was set up with: the jobs come in as one JSON text, each job goes back as one
--   JSON text, so nothing but text (and two booleans) crosses the driver. The text parameters
--   are cast from text first, so a driver that infers parameter types (asyncpg) sees text too.
-- Parameters: jobs text (a JSON array of {kind, queue, args, priority, max_attempts, run_at,
--   tags, metadata, unique_digest, unique_period, unique_states, concurrency_key,
--   ordering_key}, run_at an ISO timestamp or null), now text (ISO timestamp, NULL = the database clock), skip_held and may_repeat
--   booleans (as insert_jobs.sql). Written with psycopg's named placeholders;
--   caller_connections.py renders the driver's own.
-- Transition: row 1 with unique keys, exactly as insert_jobs.sql (insert_unique.sqlpart); rows
--   as there, with the job as JSON text (`job`, NULL for a repeated request) instead of columns.
--   Wake-ups are delivered on the caller's commit and dropped on rollback.
-- Index: as insert_jobs.sql.
WITH t AS (
    SELECT coalesce(CAST(CAST(%(now)s AS text) AS timestamptz), now()) AS now
), u AS (
    SELECT e.job->>'kind' AS kind, e.job->>'queue' AS queue, CAST(e.job->'args' AS text) AS args,
           CAST(e.job->>'priority' AS int) AS priority,
           CAST(e.job->>'max_attempts' AS int) AS max_attempts,
           CAST(e.job->>'run_at' AS timestamptz) AS run_at,
           CAST(e.job->'tags' AS text) AS tags, CAST(e.job->'metadata' AS text) AS metadata,
           e.job->>'unique_digest' AS unique_digest,
           CAST(e.job->>'unique_period' AS bigint) AS unique_period,
           CAST(e.job->>'unique_states' AS smallint) AS unique_states,
           e.job->>'concurrency_key' AS concurrency_key, e.job->>'ordering_key' AS ordering_key,
           e.ord
    FROM jsonb_array_elements(CAST(CAST(%(jobs)s AS text) AS jsonb)) WITH ORDINALITY AS e(job, ord)
), {part:new_jobs}, {part:insert_unique}
SELECT NULL::bigint AS blocked_ord, NULL::bigint AS repeat_of,
       CAST(to_jsonb(i) AS text) AS job, w.queues
FROM inserted AS i CROSS JOIN woken AS w
UNION ALL
SELECT h.ord, NULL, CAST(to_jsonb(j) AS text), 0
FROM held AS h JOIN awa.jobs AS j ON j.id = h.id
UNION ALL
SELECT r.ord, r.first_ord, NULL, 0
FROM repeated AS r
