-- Purpose: the newest hint's id, where a new listener starts reading. Parameters: none.
SELECT coalesce(max(id), 0) FROM awa_hints
