-- Purpose: a hint for listeners in other processes, committed with the change it announces.
-- Parameters: origin (the writing store), kind ('available', 'cancel', 'callback'), queue,
--   job_id, run_lease (NULL where the kind has none).
INSERT INTO awa_hints (origin, kind, queue, job_id, run_lease)
VALUES (:origin, :kind, :queue, :job_id, :run_lease)
