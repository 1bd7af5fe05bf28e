-- Purpose: how many attempts of a queue are live ({part:live_attempts}), for a claim of a
--   limited queue that did not read it with its candidates (flow_candidates.sql does).
-- Parameters: queue text.
-- Transition: none (read only).
-- Index: jobs_live_queue_idx (0013).
WITH {part:live_attempts}
SELECT n FROM live
