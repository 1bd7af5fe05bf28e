-- Purpose: tell the worker holding a cancelled attempt to stop it.
-- Parameters: id bigint, run_lease bigint.
-- Transition: follows row 17 for a running or waiting_external job.
-- Index: none. Channel awa_cancel, payload: {"id": ..., "run_lease": ...}.
SELECT pg_notify('awa_cancel',
                 json_build_object('id', %(id)s::bigint, 'run_lease', %(run_lease)s::bigint)::text)
