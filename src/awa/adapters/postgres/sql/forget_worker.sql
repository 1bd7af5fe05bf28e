-- Purpose: a worker process stopped: its rows go at once.
-- Parameters: owner text.
-- Transition: none (coordination).
-- Index: workers_pkey (owner is its first column).
DELETE FROM awa.workers WHERE owner = %(owner)s
