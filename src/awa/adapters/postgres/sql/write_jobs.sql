-- Purpose: write back the values the domain decided for jobs this transaction holds locked.
-- Parameters: one array per column, all the same length: id bigint[], state text[],
--   attempt int[], run_at timestamptz[], errors text[] (JSON), metadata text[] (JSON),
--   progress text[] (JSON or NULL), attempted_at, heartbeat_at, deadline_at, finalized_at,
--   callback_timeout_at timestamptz[], callback_id text[], callback_result text[] (JSON or
--   NULL).
-- Transition: whichever one the domain decided (rows 2, 4-18); run_lease is never written
--   here, so no path but a claim can move it, nor is the unique key: the state alone decides
--   whether the job holds it (jobs_unique_key_idx). An operator retry that takes a key back
--   was checked by the core; a key a concurrent insert took since makes the index refuse the
--   statement, and the core runs the verb again.
-- Index: jobs_pkey. Every row was locked earlier in the same transaction by the statement that
--   applied the guard (lock_leases, lock_job, lock_callback, rescue_candidates), so the guard
--   is not repeated: a second copy would be dead code that hides a broken first one.
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
FROM unnest(%(id)s::bigint[], %(state)s::text[], %(attempt)s::int[],
            %(run_at)s::timestamptz[], %(errors)s::text[], %(metadata)s::text[],
            %(progress)s::text[], %(attempted_at)s::timestamptz[],
            %(heartbeat_at)s::timestamptz[], %(deadline_at)s::timestamptz[],
            %(finalized_at)s::timestamptz[], %(callback_timeout_at)s::timestamptz[],
            %(callback_id)s::text[], %(callback_result)s::text[])
     AS u(id, state, attempt, run_at, errors, metadata, progress, attempted_at, heartbeat_at,
          deadline_at, finalized_at, callback_timeout_at, callback_id, callback_result)
WHERE j.id = u.id
