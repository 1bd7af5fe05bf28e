-- Purpose: put retried dead-letter jobs back into awa.jobs with their ids, leases and errors.
-- Parameters: one array per column, all the same length (every job column, JSON as text).
-- Transition: second half of row 20 (→ available, fresh attempt budget, run_lease kept); a job
--   takes its unique key back (the core checked it is free; if a concurrent insert took it
--   since, jobs_unique_key_idx refuses the whole statement and the core runs the verb again).
-- Index: jobs_pkey (explicit ids: the identity only generates ids for new jobs).
INSERT INTO awa.jobs ({job_columns})
SELECT r.id, r.kind, r.queue, r.args::jsonb, r.state, r.priority, r.attempt, r.max_attempts,
       r.run_lease, r.run_at, r.created_at, ARRAY(SELECT jsonb_array_elements_text(r.tags::jsonb)),
       r.metadata::jsonb, r.errors::jsonb, r.attempted_at, r.heartbeat_at, r.deadline_at,
       r.finalized_at, r.progress::jsonb, r.callback_id, r.callback_timeout_at,
       r.callback_result::jsonb, r.unique_key, r.unique_states, r.concurrency_key, r.ordering_key
FROM unnest(%(id)s::bigint[], %(kind)s::text[], %(queue)s::text[], %(args)s::text[],
            %(state)s::text[], %(priority)s::int[], %(attempt)s::int[],
            %(max_attempts)s::int[], %(run_lease)s::bigint[], %(run_at)s::timestamptz[],
            %(created_at)s::timestamptz[], %(tags)s::text[], %(metadata)s::text[],
            %(errors)s::text[], %(attempted_at)s::timestamptz[],
            %(heartbeat_at)s::timestamptz[], %(deadline_at)s::timestamptz[],
            %(finalized_at)s::timestamptz[], %(progress)s::text[], %(callback_id)s::text[],
            %(callback_timeout_at)s::timestamptz[], %(callback_result)s::text[],
            %(unique_key)s::text[], %(unique_states)s::smallint[],
            %(concurrency_key)s::text[], %(ordering_key)s::text[])
     AS r({job_columns})
