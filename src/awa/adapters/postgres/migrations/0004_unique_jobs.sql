-- Migration 0004: unique jobs.
--
-- A unique job carries its key (awa.domain.unique: a digest of what makes a duplicate, and
-- the number of its period when it has one) and the states in which it holds the key, as a
-- bit mask: awa.state_bit gives each state its bit, in the order of awa.domain.JobState. The
-- partial unique index below is the same predicate as awa.domain.unique.holds_unique_key, so
-- two jobs can never hold one key, whichever processes insert or retry them at once: the
-- second writer's statement fails (or, under ON CONFLICT, skips) instead. The key is released
-- and taken back as the job moves out of and into its states, by the index alone; a job in
-- awa.dlq holds none (the columns travel with it, so a redrive takes the key back).

CREATE FUNCTION awa.state_bit(state text) RETURNS smallint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE state
        WHEN 'scheduled' THEN 1
        WHEN 'available' THEN 2
        WHEN 'running' THEN 4
        WHEN 'waiting_external' THEN 8
        WHEN 'retryable' THEN 16
        WHEN 'completed' THEN 32
        WHEN 'failed' THEN 64
        WHEN 'cancelled' THEN 128
    END::smallint
$$;

ALTER TABLE awa.jobs
    ADD COLUMN unique_key    text,
    ADD COLUMN unique_states smallint,
    ADD CONSTRAINT jobs_unique_key_with_states CHECK (
        (unique_key IS NULL) = (unique_states IS NULL)),
    ADD CONSTRAINT jobs_unique_states_valid CHECK (unique_states BETWEEN 1 AND 255);

ALTER TABLE awa.dlq
    ADD COLUMN unique_key    text,
    ADD COLUMN unique_states smallint;

-- insert_jobs.sql, fire_schedule.sql, lock_unique_holder.sql: who holds a key
CREATE UNIQUE INDEX jobs_unique_key_idx ON awa.jobs (unique_key)
    WHERE unique_key IS NOT NULL AND unique_states & awa.state_bit(state) <> 0;
