-- Purpose: the keyed window of a queue with a key_concurrency_limit and no key_rate_limit, no
--   priority aging (PostgresClaims._claim_limited), once lock_queue_flow.sql holds the queue's
--   row: the candidates of just the keys whose turn can come in this claim, found by walking
--   the keys in turn order from the queue's turn cursor and stopping once enough are found,
--   so a claim costs what it grants, not what the queue holds. flow_candidates_keyed.sql
--   locks `limit` jobs of each key, (keys + 1) × limit rows, for a claim that grants at most
--   `limit`; with 1,000 keys that is 10,000 row locks a claim.
-- Why these candidates are enough (awa.domain.flow_claims decides over them as over the whole
--   window; tests/postgres/test_flow_turns.py holds it to that): the domain takes priority
--   bands in order and, in a band, one job per key per round, keys in turn order (key-less
--   jobs first, then keys in code-point order) starting after the queue's turn cursor. A key
--   at its limit takes nothing. So only keys with room can take a turn, and the first `limit`
--   of them ordered by (the priority of their first runnable job, turn order) hold every key
--   that can take one of the claim's `limit` grants: a band with m keys grants at least m,
--   and the keys of later bands are taken in the same order among those ordered after. The
--   walk (`walk`) visits the keys in turn order, and stops once `limit` keys with room have
--   their first job at `top`, the best priority of any runnable job: no key it did not visit
--   can come before them. When it finds fewer it has visited every key, and `chosen` orders
--   what it saw. Each chosen key needs at most min(limit, room) jobs, its first in claim
--   order; it gives one more, so that a key with more work than room shows the domain a job
--   its limit holds back (awa.claims.throttled, and the worker's claim when the key's slot
--   comes back: Runtime._finished).
-- Parameters: now (timestamptz, NULL = the database clock), queue text, limit int. The key
--   limit and the turn cursor are read from the queue's row, which the lock holds: the
--   statement can be sent before the lock's answer is read (PgTransaction.queue_flow).
-- Transition: none by itself (as flow_candidates.sql: claim_granted.sql does row 3).
-- Time: each key visited costs two descents of jobs_key_claim_idx (the next key, its first
--   job) and takes no lock; the walk visits the keys with room it needs and the keys at
--   their limit between them, not every key. Only the chosen keys' rows are locked: at most
--   limit × (min(limit, cap) + 1) rows. The key-less jobs' first job is looked up only when
--   the walk reaches their turn: in a queue of keyed jobs that lookup walks jobs_claim_idx
--   past every one of them (docs/postgres.md, "Schema 0014").
-- Order: code-point order, as Python compares the keys: concurrency_key and turn_cursor are
--   COLLATE "C" (0014), so the index's order is the turn order whatever the database's
--   collation; the rows come unordered.
-- Rows: now, the queue's live attempts, how many keys the walk visited with a job that can run
--   now are at their limit (each holds back at least that job: what awa.claims.throttled
--   counts for them, as no candidate of theirs reaches the domain; a lower bound when the
--   walk stopped early), the live attempts' keys and their counts (two arrays, for the
--   domain's key limits), then the job's columns; one row of NULL job columns when no key
--   has room.
-- Index: jobs_key_claim_idx (queue, concurrency_key, priority, run_at, id) (0014) for the walk
--   and the chosen keys' windows; jobs_claim_idx for `top` and the key-less jobs;
--   jobs_live_queue_idx for the counts.
WITH RECURSIVE {part:claim_now}, {part:live_attempts}, q AS (
    SELECT qq.key_concurrency_limit AS cap, qq.turn_cursor AS cursor, qq.turn_taken AS taken
    FROM awa.queues AS qq
    WHERE qq.queue = %(queue)s
), live_keys AS (
    SELECT lj.concurrency_key AS key, count(*) AS n
    FROM awa.jobs AS lj
    WHERE lj.queue = %(queue)s
      AND lj.state IN ('running', 'waiting_external')
      AND lj.concurrency_key IS NOT NULL
    GROUP BY lj.concurrency_key
), top AS (
    -- the best priority of any job that can run now: no key's first job comes before it
    SELECT j.priority
    FROM awa.jobs AS j, t
    WHERE j.queue = %(queue)s AND {part:runnable_now}
    ORDER BY j.priority, j.run_at, j.id
    LIMIT 1
), keyless_first AS (
    -- read only when the walk reaches the key-less jobs' turn (a scalar subquery's CTE is
    -- run on first use): in a queue of keyed jobs it reads every one of them
    SELECT j.priority
    FROM awa.jobs AS j, t
    WHERE j.queue = %(queue)s
      AND j.concurrency_key IS NULL
      AND {part:runnable_now}
    ORDER BY j.priority, j.run_at, j.id
    LIMIT 1
), walk (pos, seg, key, keyless, priority, room, hits, held) AS (
    -- before the first key of segment 0: the keys after the cursor, or every key when no
    -- key's turn was taken ('' sorts before every key); the key-less jobs' turn is first
    -- when no turn was taken yet
    SELECT 0, 0,
           CASE WHEN q.taken AND q.cursor IS NOT NULL THEN q.cursor ELSE '' END COLLATE "C",
           NOT q.taken, s.priority, %(limit)s::int,
           coalesce(s.priority = (SELECT priority FROM top), false)::int, 0
    FROM q
    CROSS JOIN LATERAL (
        SELECT CASE WHEN NOT q.taken THEN (SELECT priority FROM keyless_first) END AS priority
    ) AS s
    UNION ALL
    SELECT w.pos + 1, s.seg, s.key, s.keyless, s.priority, s.room,
           w.hits + coalesce(s.priority = (SELECT priority FROM top) AND s.room > 0, false)::int,
           w.held + (s.priority IS NOT NULL AND s.room <= 0)::int
    FROM walk AS w
    CROSS JOIN q
    CROSS JOIN t
    CROSS JOIN LATERAL (
        -- the next key in index order (a skip scan: one descent), past the segment's end
        -- (segment 1 stops at the cursor) as none
        SELECT CASE WHEN w.seg = 1 AND n.key > q.cursor THEN NULL ELSE n.key END AS key
        FROM (SELECT (SELECT j.concurrency_key
                      FROM awa.jobs AS j
                      WHERE j.queue = %(queue)s
                        AND j.concurrency_key > w.key
                        AND j.state IN ('available', 'scheduled', 'retryable')
                      ORDER BY j.concurrency_key
                      LIMIT 1) AS key) AS n
    ) AS nk
    CROSS JOIN LATERAL (
        -- a key: the priority of its first job that can run now (none: it has no turn), and
        -- how many more attempts its limit lets start
        SELECT w.seg AS seg, nk.key COLLATE "C" AS key, false AS keyless,
               (SELECT j.priority
                FROM awa.jobs AS j
                WHERE j.queue = %(queue)s
                  AND j.concurrency_key = nk.key
                  AND {part:runnable_now}
                ORDER BY j.priority, j.run_at, j.id
                LIMIT 1) AS priority,
               least(%(limit)s::int, q.cap - coalesce((SELECT l.n FROM live_keys AS l
                                                  WHERE l.key = nk.key), 0))::int AS room
        WHERE nk.key IS NOT NULL
        UNION ALL
        -- segment 0 ran out: the key-less jobs' turn unless it came first, then segment 1,
        -- the keys up to the cursor, when the cursor is a key (else the walk ends here)
        SELECT 1, CASE WHEN q.taken AND q.cursor IS NOT NULL THEN '' END COLLATE "C", q.taken,
               CASE WHEN q.taken THEN (SELECT priority FROM keyless_first) END, %(limit)s::int
        WHERE nk.key IS NULL AND w.seg = 0
    ) AS s
    -- enough keys with room at the best priority: none walked after them can come first
    WHERE w.key IS NOT NULL AND w.hits < %(limit)s
), held AS (
    SELECT max(w.held) AS n FROM walk AS w
), chosen AS (
    SELECT CASE WHEN w.keyless THEN NULL ELSE w.key END AS key, w.room
    FROM walk AS w
    WHERE w.priority IS NOT NULL AND w.room > 0
    ORDER BY w.priority, w.pos
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
SELECT t.now, live.n, held.n,
       (SELECT array_agg(l.key) FROM live_keys AS l), (SELECT array_agg(l.n) FROM live_keys AS l),
       p.*
FROM t, live, held
LEFT JOIN (SELECT * FROM keyed UNION ALL SELECT * FROM keyless) AS p ON true
