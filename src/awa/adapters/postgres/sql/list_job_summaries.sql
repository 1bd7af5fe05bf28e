-- Purpose: a page of jobs outside the dead-letter queue as a listing shows them (the
--   dashboard's /jobs, ``JobSummary``): what list_jobs.sql finds, in its order, but only the
--   columns a listing shows and the start of the last error's text. args, metadata, progress,
--   callback_result and the error history are never selected, so their TOASTed values are not
--   read at all: a page costs the same whether the jobs carry 1 KB or 1 MB of args.
-- Parameters: state text, kind text, queue text, tag text (each NULL = any), before_id bigint
--   (NULL = from the newest), limit int, error_chars int (how many characters of the last
--   error's text to return; the core cuts and marks the rest).
-- Columns: summaries.SUMMARY_COLUMNS, in that order (checked by name when read).
-- Transition: none (read only).
-- Index: jobs_pkey backwards from before_id, the filters applied on the way (as list_jobs.sql).
SELECT id, kind, queue, state, priority, attempt, max_attempts, run_lease, run_at, created_at,
       finalized_at, tags,
       substr(errors -> -1 ->> 'error', 1, %(error_chars)s::int) AS last_error,
       NULL::text AS dlq_reason, NULL::timestamptz AS dlq_at
FROM awa.jobs
{part:listing_page}
