-- Purpose: keep only the newest `keep` hints: listeners read them within a poll interval.
-- Parameters: keep. Index: the primary key (a range at its start).
DELETE FROM awa_hints WHERE id <= (SELECT max(id) FROM awa_hints) - :keep
