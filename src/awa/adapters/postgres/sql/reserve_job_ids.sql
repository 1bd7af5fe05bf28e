-- Purpose: the first step of a bulk insert by COPY (inserts/by_copy.py): `count` ids from
--   awa.jobs' identity, in order, and the time the jobs are created at, from which
--   awa.domain.decisions.create_job decides every column that copy_jobs.sql then writes.
-- Parameters: count int, now (timestamptz, NULL = the database clock).
-- Transition: none yet (row 1 is copy_jobs.sql's). Ids come back as one comma-separated text:
--   cheaper to read than an array of 1,000 numbers, whatever the driver.
-- Index: none; the identity sequence of awa.jobs.id (the only source of job ids).
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       array_to_string(ARRAY(SELECT nextval(s.seq) FROM generate_series(1, %(count)s::int)), ',')
FROM (SELECT pg_get_serial_sequence('awa.jobs', 'id')::regclass AS seq) AS s
