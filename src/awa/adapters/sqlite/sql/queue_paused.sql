-- Purpose: whether a queue is paused (no row: not paused). Parameters: queue.
SELECT EXISTS (SELECT 1 FROM awa_queues WHERE queue = :queue AND paused)
