-- Purpose: tell the worker whose attempt waits on a callback that the external side answered
--   (it reads the job to learn how: resumed, completed, failed or retried).
-- Parameters: id bigint, run_lease bigint (the attempt that registered the callback).
-- Transition: follows rows 11-13 (and a callback policy failure).
-- Index: none. Channel awa_callback, payload: {"id": ..., "run_lease": ...}.
SELECT pg_notify('awa_callback',
                 json_build_object('id', %(id)s::bigint, 'run_lease', %(run_lease)s::bigint)::text)
