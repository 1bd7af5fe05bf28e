-- Purpose: wake the workers of each queue that just got available jobs. Delivered on commit,
--   dropped on rollback; PostgreSQL folds duplicates within a transaction.
-- Parameters: queues text[].
-- Transition: follows rows 1, 2, 13, 18, 20 and queue resume.
-- Index: none. Channel awa_wakeup, payload: the queue name.
SELECT pg_notify('awa_wakeup', q) FROM unnest(%(queues)s::text[]) AS q
