-- Migration 0006: which kinds live workers handle, per queue.
--
-- Every worker process records, on each maintenance pass, one row per queue it works with
-- the kinds it has handlers for there (record_worker.sql), lapsing after a few passes; a
-- worker that stops deletes its rows (forget_worker.sql), a dead one's lapse. `awa queue
-- stats` compares runnable jobs against them (unhandled_kinds.sql) to say which kinds wait
-- where no live worker takes them: a producer that inserted on the wrong queue.

CREATE TABLE awa.workers (
    owner      text        NOT NULL,
    queue      text        NOT NULL,
    kinds      text[]      NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (owner, queue),
    CONSTRAINT workers_owner_given CHECK (btrim(owner) <> ''),
    CONSTRAINT workers_queue_valid CHECK (queue ~ '^[a-z0-9_][a-z0-9_.:-]{0,127}$')
);
