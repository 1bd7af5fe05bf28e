-- Purpose: the keyed window of a queue with a key_concurrency_limit and no key_rate_limit, no
--   priority aging (PostgresClaims._claim_limited), once lock_queue_flow.sql holds the queue's
--   row: the candidates of just the keys whose turn can come in this claim, not of every key.
--   flow_candidates_keyed.sql locks `limit` jobs of each key, (keys + 1) × limit rows, for a
--   claim that grants at most `limit`; with 1,000 keys that is 10,000 row locks a claim.
-- Why these candidates are enough (awa.domain.flow_claims decides over them as over the whole
--   window): the domain takes priority bands in order and, in a band, one job per key per
--   round, keys in turn order (key-less jobs first, then keys in code-point order) starting
--   after the queue's turn cursor. A key at its limit takes nothing. So only keys with room
--   can take a turn, and the first `limit` of them ordered by (the priority of their first
--   runnable job, turn order) hold every key that can take one of the claim's `limit` grants:
--   a band with m keys grants at least m, and the keys of later bands are taken in the same
--   order among those ordered after. Each chosen key needs at most min(limit, room) jobs,
--   its first in claim order; it gives one more, so that a key with more work than room
--   shows the domain a job its limit holds back (awa.claims.throttled, and the worker's
--   claim when the key's slot comes back: Runtime._finished).
-- Parameters: now (timestamptz, NULL = the database clock), queue text, limit int, cap int
--   (the queue's key_concurrency_limit), cursor text and taken boolean (the turn cursor as
--   lock_queue_flow.sql read it).
-- Transition: none by itself (as flow_candidates.sql: claim_granted.sql does row 3).
-- Time: `firsts` reads one index entry per key and takes no lock; only the chosen keys' rows
--   are locked: at most limit × (min(limit, cap) + 1) rows, whatever the number of keys.
-- Order: code-point order (COLLATE "C"), as Python compares the keys; the rows come unordered.
-- Rows: now, the queue's live attempts, and how many keys with a job that can run now are at
--   their limit (each holds back at least that job: what awa.claims.throttled counts for
--   them, as no candidate of theirs reaches the domain), then the job's columns; one row of
--   NULL job columns when no key has room.
-- Index: jobs_key_claim_idx (queue, concurrency_key, priority, run_at, id) (0014) for the keys'
--   skip scan, their first jobs and the chosen keys' windows; jobs_claim_idx for the key-less
--   jobs; jobs_live_queue_idx for the counts.
WITH RECURSIVE {part:claim_now}, {part:live_attempts}, live_keys AS (
    SELECT lj.concurrency_key AS key, count(*) AS n
    FROM awa.jobs AS lj
    WHERE lj.queue = %(queue)s
      AND lj.state IN ('running', 'waiting_external')
      AND lj.concurrency_key IS NOT NULL
    GROUP BY lj.concurrency_key
), {part:runnable_keys}, firsts AS (
    SELECT k.key, f.priority, least(%(limit)s, %(cap)s - coalesce(l.n, 0)) AS room
    FROM keys AS k
    CROSS JOIN t
    LEFT JOIN live_keys AS l ON l.key = k.key
    CROSS JOIN LATERAL (
        SELECT j.priority
        FROM awa.jobs AS j
        WHERE j.queue = %(queue)s
          AND j.concurrency_key = k.key
          AND {part:runnable_now}
        ORDER BY j.priority, j.run_at, j.id
        LIMIT 1
    ) AS f
    WHERE k.key IS NOT NULL
    UNION ALL
    SELECT NULL, f.priority, %(limit)s
    FROM t
    CROSS JOIN LATERAL (
        SELECT j.priority
        FROM awa.jobs AS j
        WHERE j.queue = %(queue)s
          AND j.concurrency_key IS NULL
          AND {part:runnable_now}
        ORDER BY j.priority, j.run_at, j.id
        LIMIT 1
    ) AS f
), held AS (
    SELECT count(*) AS n FROM firsts AS f WHERE f.room <= 0
), chosen AS (
    SELECT f.key, f.room
    FROM firsts AS f
    WHERE f.room > 0
    ORDER BY f.priority,
             -- the keys after the cursor first (none: every key is after it), then the rest
             CASE
                 WHEN NOT %(taken)s::boolean THEN 0
                 WHEN %(cursor)s::text IS NULL THEN (f.key IS NULL)::int
                 WHEN f.key IS NULL THEN 1
                 ELSE (f.key COLLATE "C" <= %(cursor)s::text COLLATE "C")::int
             END,
             f.key IS NOT NULL,
             f.key COLLATE "C"
    LIMIT %(limit)s
), keyed AS (
    SELECT w.*
    FROM chosen AS c
    CROSS JOIN t
    CROSS JOIN LATERAL (
        SELECT {j.job_columns}
        FROM awa.jobs AS j
        WHERE j.queue = %(queue)s
          AND j.concurrency_key = c.key
          AND {part:runnable_now}
        ORDER BY j.priority, j.run_at, j.id
        LIMIT c.room + 1  -- one more than the key may take: the domain counts it held back
        FOR UPDATE OF j SKIP LOCKED
    ) AS w
    WHERE c.key IS NOT NULL
), keyless AS (
    SELECT {j.job_columns}
    FROM awa.jobs AS j, t
    WHERE EXISTS (SELECT 1 FROM chosen AS c WHERE c.key IS NULL)
      AND {part:keyless_window}
)
SELECT t.now, live.n, held.n, p.*
FROM t, live, held
LEFT JOIN (SELECT * FROM keyed UNION ALL SELECT * FROM keyless) AS p ON true
