-- Migration 0002: maintenance leadership and retention.
--
-- awa.leader holds one expiring row per leadership name (awa uses 'maintenance'): the leader
-- renews it on every maintenance pass; when the leader dies its row expires and another
-- process takes it over (try_lead.sql); a leader shutting down deletes it (release_lead.sql).
-- An expiring row instead of a session advisory lock: a session lock belongs to one
-- connection, and a pooled store runs each verb on whichever connection the pool hands out,
-- so the lock would be held (or released) by the wrong session. See docs/postgres.md.
-- jobs_finished_idx serves delete_finished.sql; expire_dlq.sql uses dlq_at_idx from 0001.

CREATE TABLE awa.leader (
    name       text        PRIMARY KEY,
    owner      text        NOT NULL,
    expires_at timestamptz NOT NULL,
    CONSTRAINT leader_owner_given CHECK (btrim(owner) <> '')
);

-- delete_finished.sql: terminal jobs in (finalized_at, id) order
CREATE INDEX jobs_finished_idx ON awa.jobs (finalized_at, id)
    WHERE state IN ('completed', 'failed', 'cancelled');
