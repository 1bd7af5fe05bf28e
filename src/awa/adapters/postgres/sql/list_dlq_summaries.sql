-- Purpose: a page of dead-letter entries as a listing shows them (the dashboard's /dlq,
--   ``JobSummary``): what list_dlq.sql finds, in its order, with the filters of
--   list_job_summaries.sql, but only the columns a listing shows, the start of the last
--   error's text and why and when the job was dead-lettered. args, metadata, progress,
--   callback_result and the error history are never selected (their TOASTed values are not
--   read).
-- Parameters: state text, kind text, queue text, tag text (each NULL = any), before_id bigint
--   (NULL = from the newest), limit int, error_chars int (characters of the last error's text).
-- Columns: summaries.SUMMARY_COLUMNS, in that order (checked by name when read).
-- Transition: none (read only).
-- Index: dlq_pkey backwards from before_id, the filters applied on the way (as list_dlq.sql).
SELECT id, kind, queue, state, priority, attempt, max_attempts, run_lease, run_at, created_at,
       finalized_at, tags,
       substr(errors -> -1 ->> 'error', 1, %(error_chars)s::int) AS last_error,
       dlq_reason, dlq_at
FROM awa.dlq
{part:listing_page}
