-- Purpose: insert one job without a unique key (inserts/single.py): a small statement, prepared
--   once per connection, that returns only what the caller's Job lacks, its id and creation time.
-- Parameters: now (timestamptz, NULL = the database clock), kind, queue, args (JSON text),
--   priority, max_attempts, run_at (timestamptz or NULL), tags (a text[] literal), metadata
--   (JSON text), concurrency_key and ordering_key (text or NULL).
-- Transition: row 1, the rule of awa.domain.decisions.create_job (scheduled when run_at is
--   after now, else available), which the caller applies to the returned time to build the Job.
--   The wake-up NOTIFY (awa_wakeup, payload: the queue) for an available job is the uncorrelated
--   scalar subquery, run once: one statement, one round trip.
-- Index: none read. Into awa.jobs, which routes the row to awa.jobs_hot (a new job is never
--   finished): routing costs the backend 13-23 us less than checking awa.jobs_hot's
--   partition constraint on a direct insert (docs/performance.md, "Insert path").
WITH t AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), i AS (
    INSERT INTO awa.jobs (kind, queue, args, state, priority, max_attempts, run_at, created_at,
                      tags, metadata, concurrency_key, ordering_key)
    SELECT %(kind)s, %(queue)s, %(args)s::jsonb,
           CASE WHEN coalesce(%(run_at)s::timestamptz, t.now) > t.now
                THEN 'scheduled' ELSE 'available' END,
           %(priority)s, %(max_attempts)s, coalesce(%(run_at)s::timestamptz, t.now), t.now,
           %(tags)s::text[], %(metadata)s::jsonb, %(concurrency_key)s::text,
           %(ordering_key)s::text
    FROM t
    RETURNING id, created_at, state, queue
)
SELECT i.id, i.created_at,
       (SELECT count(pg_notify('awa_wakeup', w.queue)) FROM i AS w WHERE w.state = 'available')
FROM i
