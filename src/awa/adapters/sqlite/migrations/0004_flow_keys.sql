-- Migration 0004: keyed flow control. Jobs carry a concurrency_key and an ordering_key; a
-- queue's key limits hold each concurrency_key apart, and a claim takes the keys in turn.
--
-- concurrency_key, ordering_key (jobs, dead letters, schedules): NULL or 1 to 128 characters
-- (awa.domain.flow_limits.FLOW_KEY_LENGTH_MAX). A dead letter keeps its job whole, so restore
-- puts the keys back; a schedule's are its template's, and every fire's jobs carry them.
-- key_concurrency_limit, key_rate_per_second and key_rate_burst (queues): the limits of each
-- key, at the bounds of the queue's own (0003), the rate pair both or neither.
-- turn_cursor and turn_taken (queues): the key whose turn came last (NULL: the jobs without a
-- key) once a claim took a turn (awa.domain.flow_turns); before that turns start at the first.
-- awa_key_buckets: each key's token bucket as the last claim left it; no row reads as a full
-- bucket, and configure_queue deletes a queue's rows when its key rate is given.
--
-- ADD COLUMN cannot add a table constraint; a column's CHECK may name the columns before it,
-- so the rate pair's both-or-neither rule sits on its second column, as in 0003.
ALTER TABLE awa_jobs ADD COLUMN concurrency_key TEXT
    CONSTRAINT jobs_concurrency_key_length CHECK (length(concurrency_key) BETWEEN 1 AND 128);
ALTER TABLE awa_jobs ADD COLUMN ordering_key TEXT
    CONSTRAINT jobs_ordering_key_length CHECK (length(ordering_key) BETWEEN 1 AND 128);
ALTER TABLE awa_dlq ADD COLUMN concurrency_key TEXT
    CONSTRAINT dlq_concurrency_key_length CHECK (length(concurrency_key) BETWEEN 1 AND 128);
ALTER TABLE awa_dlq ADD COLUMN ordering_key TEXT
    CONSTRAINT dlq_ordering_key_length CHECK (length(ordering_key) BETWEEN 1 AND 128);
ALTER TABLE awa_schedules ADD COLUMN concurrency_key TEXT
    CONSTRAINT schedules_concurrency_key_length CHECK (length(concurrency_key) BETWEEN 1 AND 128);
ALTER TABLE awa_schedules ADD COLUMN ordering_key TEXT
    CONSTRAINT schedules_ordering_key_length CHECK (length(ordering_key) BETWEEN 1 AND 128);

ALTER TABLE awa_queues ADD COLUMN key_concurrency_limit INTEGER
    CONSTRAINT queues_key_concurrency_limit_range
    CHECK (key_concurrency_limit BETWEEN 1 AND 1000000);
ALTER TABLE awa_queues ADD COLUMN key_rate_per_second REAL
    CONSTRAINT queues_key_rate_per_second_range
    CHECK (key_rate_per_second BETWEEN 0.000001 AND 1000000.0);
ALTER TABLE awa_queues ADD COLUMN key_rate_burst INTEGER
    CONSTRAINT queues_key_rate_burst_range CHECK (key_rate_burst BETWEEN 1 AND 1000000)
    CONSTRAINT queues_key_rate_pair CHECK ((key_rate_per_second IS NULL) = (key_rate_burst IS NULL));
ALTER TABLE awa_queues ADD COLUMN turn_cursor TEXT
    CONSTRAINT queues_turn_cursor_length CHECK (length(turn_cursor) BETWEEN 1 AND 128);
ALTER TABLE awa_queues ADD COLUMN turn_taken INTEGER NOT NULL DEFAULT 0
    CONSTRAINT queues_turn_taken_bool CHECK (turn_taken IN (0, 1))
    CONSTRAINT queues_turn_cursor_taken CHECK (turn_cursor IS NULL OR turn_taken = 1);

-- key_buckets.sql, keep_key_buckets.sql, delete_key_buckets.sql: one queue's rows, by key.
-- The domain caps tokens at the burst; the burst is the queue's row's, which a CHECK here
-- cannot read, so only the floor is held.
CREATE TABLE awa_key_buckets (
    queue      TEXT    NOT NULL,
    key        TEXT    NOT NULL CHECK (length(key) BETWEEN 1 AND 128),
    tokens     REAL    NOT NULL CHECK (tokens >= 0),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (queue, key)
) WITHOUT ROWID;

-- claim_candidates*.sql, THE ORDERING FILTER: is there an unfinished job of the key below this
-- one (a range read that stops at its first entry), and is an attempt of the key live (the
-- few live attempts that have a key). Jobs without an ordering key are in neither. state is
-- the last column so the tests read the index alone (as jobs_live_queue_idx, 0003).
CREATE INDEX jobs_ordering_idx ON awa_jobs (queue, ordering_key, id, state)
    WHERE ordering_key IS NOT NULL
      AND state IN ('scheduled', 'available', 'retryable', 'running', 'waiting_external');
CREATE INDEX jobs_ordering_live_idx ON awa_jobs (queue, ordering_key, state)
    WHERE ordering_key IS NOT NULL AND state IN ('running', 'waiting_external');
-- claim_candidates_per_key*.sql, the per-key window: a skip scan seeks each concurrency_key of a
-- queue's runnable jobs, then reads that key's (or the key-less jobs') first few in claim order:
-- a key's jobs behind its first few that pass the ordering filter are never read.
CREATE INDEX jobs_claim_key_idx ON awa_jobs (queue, concurrency_key, priority, run_at, id)
    WHERE state IN ('available', 'scheduled', 'retryable');
-- live_by_key.sql: one queue's live attempts counted per key from the index alone.
CREATE INDEX jobs_live_key_idx ON awa_jobs (queue, concurrency_key, state)
    WHERE concurrency_key IS NOT NULL AND state IN ('running', 'waiting_external');
