-- Purpose: the id the next inserted job gets: one past the last id ever handed out (the
--   AUTOINCREMENT counter), so the domain builds jobs with their ids before they are written.
-- Parameters: none. Transition: none. Runs inside BEGIN IMMEDIATE: no other writer can take
--   the id in between.
SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'awa_jobs'), 0) + 1
