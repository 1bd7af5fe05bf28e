"""The turn window (``flow_candidates_turns.sql``) against the whole keyed window
(``flow_candidates_keyed.sql``): over any queue of keyed and key-less jobs, of mixed
priorities, some not yet due, some keys at their limit, and any turn cursor, the domain grants
exactly the same jobs from the few keys the turn window walks as from every key's window. The
walk stops early, so this is what holds it to the domain's turn order (awa.domain.flow_turns):
keys in code-point order after the cursor, the key-less jobs as one more key, priority first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from awa.adapters._sql_rows import JOB_COLUMNS
from awa.adapters.core.flow import within_limits
from awa.adapters.postgres import PostgresStore, migrate
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.claims import _sort_claimed
from awa.adapters.postgres.transaction import CandidatesPlan, PgTransaction
from awa.domain import NewJob
from tests.postgres.test_flow_plans import _explain

QUEUE = "turns"
#: in code-point order "B" < "a" < "a0" < "b" < "z1" < "é": a database collation other than
#: "C" orders them otherwise, and the walk must follow the domain's order, not the locale's
KEYS = ["a", "b", "B", "z1", "é"]
CURSORS = [*KEYS, "a0"]  # "a0": a cursor whose key has no job left

_ADD_JOB = """
INSERT INTO awa.jobs (kind, queue, state, priority, run_at, created_at, concurrency_key)
VALUES ('chore', %(queue)s, %(state)s, %(priority)s,
        now() + CASE WHEN %(due)s THEN interval '-1 hour' ELSE interval '1 hour' END
              + %(n)s * interval '1 ms',
        now() - interval '2 hours', %(key)s)
"""
_ADD_RUNNING = """
INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease, run_at, created_at, attempted_at,
                      heartbeat_at, concurrency_key)
VALUES ('chore', %(queue)s, 'running', 1, 1, now(), now(), now(), now(), %(key)s)
"""
_ADD_QUEUE = """
INSERT INTO awa.queues (queue, key_concurrency_limit, turn_cursor, turn_taken)
VALUES (%(queue)s, %(cap)s, %(cursor)s, %(taken)s)
"""

#: a job waiting to run: its key, priority, whether it is due, and the state it waits in (an
#: available job is always due; a scheduled or retryable one may be due before promotion)
job = st.tuples(
    st.none() | st.sampled_from(KEYS),  # concurrency key
    st.integers(1, 3),  # priority
    st.booleans() | st.just(True),  # due (more often than not)
    st.sampled_from(["available", "available", "scheduled", "retryable"]),
).map(lambda j: j if j[2] or j[3] != "available" else (*j[:3], "scheduled"))
#: no turn taken yet; the key-less jobs' turn taken last; a key's turn taken last
cursor = st.sampled_from([(None, False), (None, True)]) | st.tuples(
    st.sampled_from(CURSORS), st.just(True)
)


@pytest.fixture(scope="module")
def icu_url(create_database: Callable[..., str]) -> str:
    """A migrated database whose text sorts by ICU's root collation, as a user's database
    sorts by its language ("a" < "B" < "b" < "é" < "z1"): the keys' column is "C" (0014)."""
    url = create_database(icu_locale="und")
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
    return url


def _grants(tx: PgTransaction, limit: int, turns: bool) -> list[int]:
    flow = tx.queue_flow(QUEUE)
    assert flow is not None
    statement = "flow_candidates_turns" if turns else "flow_candidates_keyed"
    candidates, _ = tx.candidates(
        QUEUE, CandidatesPlan(statement, {"queue": QUEUE, "limit": limit})
    )
    now = tx.now()
    _sort_claimed(candidates, now, 0.0)
    return [j.id for j in within_limits(tx, QUEUE, flow, candidates, limit, now)]


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
# a key-less job not yet due, of better priority than any due job: the key-less turn has no
# job that can run now, and must not take a key's place among the chosen
@example(
    jobs=[(None, 1, False, "scheduled"), ("a", 2, True, "available")],
    running=[],
    cap=1,
    limit=1,
    turn=(None, False),
)
# the same for a key: one whose only job is not yet due takes no turn
@example(
    jobs=[("a", 1, False, "retryable"), ("b", 2, True, "available")],
    running=[],
    cap=1,
    limit=1,
    turn=(None, False),
)
# a key whose only job is due but still scheduled (not yet promoted) has its turn
@example(
    jobs=[("a", 1, True, "scheduled"), ("b", 1, True, "retryable")],
    running=[],
    cap=1,
    limit=2,
    turn=(None, False),
)
# the key-less jobs' turn first, of a worse priority than the keys': not one of the keys the
# claim needs, so the walk goes on to b
@example(
    jobs=[(None, 2, True, "available"), ("a", 1, True, "available"), ("b", 1, True, "available")],
    running=[],
    cap=1,
    limit=2,
    turn=(None, False),
)
# fewer keys at the best priority than the claim takes: the walk visits every key, and the
# rest are chosen by priority, then in the order walked (a, not c)
@example(
    jobs=[(None, 1, True, "available"), *((k, 2, True, "available") for k in "abc")],
    running=[],
    cap=1,
    limit=2,
    turn=(None, False),
)
@given(
    jobs=st.lists(job, max_size=30),
    running=st.lists(st.sampled_from(KEYS), max_size=5),
    cap=st.integers(1, 2),
    limit=st.integers(1, 5),
    turn=cursor,
)
def test_the_turn_window_grants_what_every_keys_window_grants(
    icu_url: str,
    jobs: list[tuple[str | None, int, bool, str]],
    running: list[str],
    cap: int,
    limit: int,
    turn: tuple[str | None, bool],
) -> None:
    with psycopg.connect(icu_url) as conn, conn.cursor() as cur:
        for n, (key, priority, due, state) in enumerate(jobs):
            params: dict[str, Any] = {"queue": QUEUE, "state": state, "priority": priority}
            cur.execute(_ADD_JOB, {**params, "due": due, "n": n, "key": key})
        for key in running:
            cur.execute(_ADD_RUNNING, {"queue": QUEUE, "key": key})
        cursor_key, taken = turn
        cur.execute(_ADD_QUEUE, {"queue": QUEUE, "cap": cap, "cursor": cursor_key, "taken": taken})
        by_turns = _grants(PgTransaction(cur, None), limit, turns=True)
        by_windows = _grants(PgTransaction(cur, None), limit, turns=False)
        conn.rollback()
    assert by_turns == by_windows
    # and the walk is no shortcut to nothing: a free key's due job is granted
    free = {k for k, _, due, _ in jobs if due and k is not None and running.count(k) < cap}
    keyless_due = any(due for k, _, due, _ in jobs if k is None)
    assert bool(by_turns) == bool(free or keyless_due)


def test_a_claim_whose_guessed_window_is_stale_reads_the_right_one(
    store: PostgresStore,
) -> None:
    """Each limited claim sends the window the queue's last limits called for ahead of the
    lock's answer; when the limits changed since, that guess is dropped and the right window
    read, and when the limits are gone the one statement claims (the guess still sent)."""
    store.configure_queue("guess", concurrency_limit=1)
    first, *_ = store.insert(
        [NewJob(kind="k", queue="guess", concurrency_key=key) for key in ["a", "a", "b", "b"]]
    )
    assert [j.id for j in store.claim("guess", limit=5, deadline_duration_s=60)] == [first.id]
    # the guess is flow_candidates.sql; the queue now needs the turn window
    store.configure_queue("guess", concurrency_limit=None, key_concurrency_limit=1)
    assert [j.concurrency_key for j in store.claim("guess", limit=5, deadline_duration_s=60)] == [
        "b"
    ]
    # the guess is the turn window; the queue has no limit left: claim.sql takes the rest
    store.configure_queue("guess", key_concurrency_limit=None)
    assert [j.concurrency_key for j in store.claim("guess", limit=5, deadline_duration_s=60)] == [
        "a",
        "b",
    ]


def test_the_walk_stops_once_it_has_the_keys_a_claim_can_grant(icu_url: str) -> None:
    """The walk's cost is the claim's, not the queue's: 300 keys, the cursor at k095, ten
    keys after it at their limit, k097's jobs of a worse priority; a claim of 8 visits
    k096..k114 (8 with room at the best priority, k097, 10 full) and no further, even with a
    job of better priority in another queue, and chooses the 8 (not k097)."""
    with psycopg.connect(icu_url) as conn, conn.cursor() as cur:
        for n in range(300):
            for _ in range(2):
                params = {"queue": QUEUE, "state": "available", "priority": 3 if n == 97 else 2}
                cur.execute(_ADD_JOB, {**params, "due": True, "n": n, "key": f"k{n:03}"})
        other = {"queue": "other", "state": "available", "priority": 1, "due": True, "n": 0}
        cur.execute(_ADD_JOB, {**other, "key": None})
        for n in range(100, 110):
            cur.execute(_ADD_RUNNING, {"queue": QUEUE, "key": f"k{n:03}"})
        cur.execute(_ADD_QUEUE, {"queue": QUEUE, "cap": 1, "cursor": "k095", "taken": True})
        params = {"now": None, "queue": QUEUE, "limit": 8}
        nodes = _explain(conn, "flow_candidates_turns", params)
        rows = cur.execute(SQL["flow_candidates_turns"], params).fetchall()
        conn.rollback()
    [walk] = [n for n in nodes if n["Node Type"] == "Recursive Union"]
    assert walk["Actual Rows"] == 1 + 4 + 10 + 5  # the start, k096..k099, the full, k110..k114
    keys = sorted({row[3 + 2 + JOB_COLUMNS.index("concurrency_key")] for row in rows})
    assert keys == ["k096", "k098", "k099", *(f"k{n:03}" for n in range(110, 115))]
    assert rows[0][2] == 10  # the full keys it walked past, held back
