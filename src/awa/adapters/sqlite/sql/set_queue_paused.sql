-- Purpose: pause or resume a queue (its settings row made on first use).
-- Parameters: queue, paused (0 or 1).
INSERT INTO awa_queues (queue, paused) VALUES (:queue, :paused)
ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused
