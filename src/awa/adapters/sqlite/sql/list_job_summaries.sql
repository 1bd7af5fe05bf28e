-- Purpose: a page of jobs outside the dead-letter queue as a listing shows them (the
--   dashboard's /jobs, ``JobSummary``): what list_jobs.sql finds, in its order, but only the
--   columns a listing shows and the start of the last error's text. args, metadata, progress,
--   callback_result and the error history never reach Python, so a page costs the same
--   whether the jobs carry 1 KB or 1 MB of args.
-- Parameters: state, kind, queue, tag, before_id (NULL: any), limit, error_chars (how many
--   characters of the last error's text to return; the core cuts and marks the rest).
-- Columns: summaries.SUMMARY_COLUMNS, in that order (checked by name when read); all but the
--   home's own two are the part summary_columns, shared with list_dlq_summaries.sql.
-- Index: the primary key, walked backwards (as list_jobs.sql).
{part:summary_columns}
       NULL AS dlq_reason, NULL AS dlq_at
FROM awa_jobs
{part:listing_page}
