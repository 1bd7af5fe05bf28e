-- Purpose: jobs outside the dead-letter queue matching the filters, newest id first.
-- Parameters: state, kind, queue, tag, before_id (NULL: any), limit.
-- Index: the primary key, walked backwards.
SELECT {job_columns} FROM awa_jobs
{part:listing_page}
