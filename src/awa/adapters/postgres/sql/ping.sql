-- Purpose: a liveness round trip: on a connection that has been quiet (the listener's, which
-- otherwise only waits for notifications and would wait forever on a silent network), and
-- for health checks (PostgresStore.ping, a worker's /readyz).
-- Parameters: none. Transition: none. Index: none.
SELECT 1
