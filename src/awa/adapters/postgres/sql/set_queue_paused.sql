-- Purpose: pause or resume claims on a queue (inserts, running attempts and rescue go on).
-- Parameters: queue text, paused boolean.
-- Transition: none (queue setting); claim.sql skips paused queues.
-- Index: queues_pkey.
INSERT INTO awa.queues AS q (queue, paused) VALUES (%(queue)s, %(paused)s)
ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused
