-- Migration 0003: retention periods of a queue's own.
--
-- A queue's settings live in awa.queues so that every process working it agrees, whichever
-- started last (`awa queue config`, `client.configure_queue`). NULL means the queue has no
-- retention of its own: the maintenance leader's RuntimeConfig default applies
-- (delete_finished.sql, expire_dlq.sql). A retention is a positive interval.

ALTER TABLE awa.queues
    ADD COLUMN finished_retention interval,
    ADD COLUMN dlq_retention      interval,
    ADD CONSTRAINT queues_finished_retention_positive
        CHECK (finished_retention IS NULL OR finished_retention > interval '0'),
    ADD CONSTRAINT queues_dlq_retention_positive
        CHECK (dlq_retention IS NULL OR dlq_retention > interval '0');
