-- Purpose: a liveness round trip on a connection that has been quiet (the listener's, which
-- otherwise only waits for notifications and would wait forever on a silent network).
-- Parameters: none. Transition: none. Index: none.
SELECT 1
