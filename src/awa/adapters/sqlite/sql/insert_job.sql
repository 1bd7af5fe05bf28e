-- Purpose: write one whole job row: a new job (row 1, values of decisions.create_job) or one
--   coming back from the dead-letter queue (row 20, decisions.operator_retry).
-- Parameters: every job column, by name. Transition: rows 1 and 20.
-- Index: jobs_unique_key_idx refuses a second holder of a unique key (UniqueKeyRace).
INSERT INTO awa_jobs ({job_columns}) VALUES ({job_params})
