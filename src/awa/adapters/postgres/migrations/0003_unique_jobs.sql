-- Migration 0003: unique jobs.
--
-- A unique job carries its key (awa.domain.unique: a digest of what makes a duplicate, and
-- the number of its period when it has one) and the states in which it holds the key. The
-- partial unique index below is the same predicate as awa.domain.unique.holds_unique_key, so
-- two jobs can never hold one key, whichever processes insert or retry them at once: the
-- second writer's statement fails (or, under ON CONFLICT, skips) instead. The key is released
-- and taken back as the job moves out of and into its states, by the index alone; a job in
-- awa.dlq holds none (the columns travel with it, so a redrive takes the key back).

ALTER TABLE awa.jobs
    ADD COLUMN unique_key    text,
    ADD COLUMN unique_states text[],
    ADD CONSTRAINT jobs_unique_key_with_states CHECK (
        (unique_key IS NULL) = (unique_states IS NULL)),
    ADD CONSTRAINT jobs_unique_states_valid CHECK (
        unique_states <@ ARRAY['scheduled', 'available', 'running', 'waiting_external',
                               'retryable', 'completed', 'failed', 'cancelled']
        AND cardinality(unique_states) > 0);

ALTER TABLE awa.dlq
    ADD COLUMN unique_key    text,
    ADD COLUMN unique_states text[];

-- insert_jobs.sql, fire_schedule.sql, lock_unique_holder.sql: who holds a key
CREATE UNIQUE INDEX jobs_unique_key_idx ON awa.jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state = ANY (unique_states);
