-- Purpose: a page of dead-letter entries as a listing shows them (the dashboard's /dlq,
--   ``JobSummary``): what list_dlq.sql finds, in its order, with the filters of
--   list_job_summaries.sql, but only the columns a listing shows, the start of the last
--   error's text and why and when the job was dead-lettered; args, metadata, progress,
--   callback_result and the error history never reach Python.
-- Parameters: state, kind, queue, tag, before_id (NULL: any), limit, error_chars (characters
--   of the last error's text).
-- Columns: summaries.SUMMARY_COLUMNS, in that order (checked by name when read); all but the
--   home's own two are the part summary_columns, shared with list_job_summaries.sql.
-- Index: the primary key, walked backwards (as list_dlq.sql).
{part:summary_columns}
       dlq_reason, dlq_at
FROM awa_dlq
{part:listing_page}
