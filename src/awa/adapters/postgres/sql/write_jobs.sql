-- Purpose: write back the values the domain decided for jobs this transaction holds locked.
-- Parameters: one array per column, all the same length: id bigint[], state text[],
--   attempt int[], run_at timestamptz[], errors text[] (JSON), metadata text[] (JSON),
--   progress text[] (JSON or NULL), attempted_at, heartbeat_at, deadline_at, finalized_at,
--   callback_timeout_at timestamptz[], callback_id text[], callback_result text[] (JSON or
--   NULL).
-- Transition: whichever one the domain decided (rows 2, 4-18); run_lease is never written
--   here, so no path but a claim can move it, nor are the unique key and the flow keys: the state alone decides
--   whether the job holds it (jobs_unique_key_idx). An operator retry that takes a key back
--   was checked by the core; a key a concurrent insert took since makes the index refuse the
--   statement, and the core runs the verb again.
-- Home: a job whose new state changes its partition (awa.job_home, migration 0010: finishing,
--   or an operator retry of a finished job) is deleted and inserted anew with the decided
--   values (`moved`, `reborn`); the others are updated in place. A transaction waiting on a
--   moved row then finds it gone, as it would find it changed; an UPDATE moving it across
--   partitions would fail that transaction instead.
-- Index: jobs_hot_pkey, jobs_done_pkey. Every row was locked earlier in the same transaction
--   by the statement that applied the guard (lock_free_leases or lock_leases, lock_job,
--   lock_callback, rescue_candidates), so the guard is not repeated: a second copy would be
--   dead code that hides a broken first one.
WITH u AS (
    SELECT *
    FROM unnest(%(id)s::bigint[], %(state)s::text[], %(attempt)s::int[],
                %(run_at)s::timestamptz[], %(errors)s::text[], %(metadata)s::text[],
                %(progress)s::text[], %(attempted_at)s::timestamptz[],
                %(heartbeat_at)s::timestamptz[], %(deadline_at)s::timestamptz[],
                %(finalized_at)s::timestamptz[], %(callback_timeout_at)s::timestamptz[],
                %(callback_id)s::text[], %(callback_result)s::text[])
         AS u(id, state, attempt, run_at, errors, metadata, progress, attempted_at,
              heartbeat_at, deadline_at, finalized_at, callback_timeout_at, callback_id,
              callback_result)
), moved AS (
    DELETE FROM awa.jobs AS j
    USING u
    WHERE j.id = u.id
      AND awa.job_home(u.state, j.unique_key, j.unique_states)
          <> awa.job_home(j.state, j.unique_key, j.unique_states)
    RETURNING j.id, j.kind, j.queue, j.args, j.priority, j.max_attempts, j.run_lease,
              j.created_at, j.tags, j.unique_key, j.unique_states, j.concurrency_key,
              j.ordering_key
), reborn AS (
    INSERT INTO awa.jobs ({job_columns})
    SELECT m.id, m.kind, m.queue, m.args, u.state, m.priority, u.attempt, m.max_attempts,
           m.run_lease, u.run_at, m.created_at, m.tags, u.metadata::jsonb, u.errors::jsonb,
           u.attempted_at, u.heartbeat_at, u.deadline_at, u.finalized_at, u.progress::jsonb,
           u.callback_id, u.callback_timeout_at, u.callback_result::jsonb, m.unique_key,
           m.unique_states, m.concurrency_key, m.ordering_key
    FROM moved AS m
    JOIN u ON u.id = m.id
)
UPDATE awa.jobs AS j
SET state = u.state,
    attempt = u.attempt,
    run_at = u.run_at,
    errors = u.errors::jsonb,
    metadata = u.metadata::jsonb,
    progress = u.progress::jsonb,
    attempted_at = u.attempted_at,
    heartbeat_at = u.heartbeat_at,
    deadline_at = u.deadline_at,
    finalized_at = u.finalized_at,
    callback_id = u.callback_id,
    callback_timeout_at = u.callback_timeout_at,
    callback_result = u.callback_result::jsonb
FROM u
WHERE j.id = u.id
  AND awa.job_home(u.state, j.unique_key, j.unique_states)
      = awa.job_home(j.state, j.unique_key, j.unique_states)
