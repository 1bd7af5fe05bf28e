-- Purpose: a page of jobs outside the dead-letter queue as a listing shows them (the
--   dashboard's /jobs, ``JobSummary``): what list_jobs.sql finds, in its order, but only the
--   columns a listing shows and the start of the last error's text. args, metadata, progress,
--   callback_result and the error history never reach Python, so a page costs the same
--   whether the jobs carry 1 KB or 1 MB of args.
-- Parameters: state, kind, queue, tag, before_id (NULL: any), limit, error_chars (how many
--   characters of the last error's text to return; the core cuts and marks the rest).
-- Columns: summaries.SUMMARY_COLUMNS, in that order (checked by name when read). The last
--   error is found by the array's length, not '$[#-1]', which needs SQLite 3.31; a history
--   that is not a JSON array shows no error rather than failing the page.
-- Index: the primary key, walked backwards (as list_jobs.sql).
SELECT id, kind, queue, state, priority, attempt, max_attempts, run_lease, run_at, created_at,
       finalized_at, tags,
       CASE WHEN json_valid(errors) AND json_array_length(errors) > 0
            THEN substr(json_extract(errors, '$[' || (json_array_length(errors) - 1) || '].error'),
                        1, :error_chars)
       END AS last_error,
       NULL AS dlq_reason, NULL AS dlq_at
FROM awa_jobs
{part:listing_page}
