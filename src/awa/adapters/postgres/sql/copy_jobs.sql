-- Purpose: write new jobs without unique keys in one COPY into awa.jobs, which routes them to
--   awa.jobs_hot (a new job is never finished: migration 0010): PostgreSQL inserts the rows
--   in batches (one WAL record per page rather than per row) and nothing comes back to
--   decode. Routing costs the backend less than checking awa.jobs_hot's partition constraint
--   on every row of a COPY straight into it (docs/performance.md, "Insert path").
-- Parameters: the rows, in COPY's text format (inserts/copy_encoding.copy_text), columns as listed:
--   each job as awa.domain.decisions.create_job made it from reserve_job_ids.sql's ids and
--   time. Columns not listed keep their defaults (no errors, no unique key).
-- Transition: row 1, decided by the domain; the wake-ups follow in the same transaction
--   (notify_wakeup.sql), one per queue that got an available job.
-- Index: none read; every index of awa.jobs_hot is written.
COPY awa.jobs (id, kind, queue, args, state, priority, attempt, max_attempts, run_lease, run_at,
               created_at, tags, metadata, concurrency_key, ordering_key)
FROM STDIN
