"""Every ``awa`` command through a real subprocess against PostgreSQL: what it prints with
``--json``, what it changes in the database, and how it fails."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import LATEST_VERSION, PostgresStore
from awa.cli import main
from awa.domain import CallbackToken, Complete, Fail, JobState, NewJob, WaitForCallback
from awa.ports import Finish
from tests.cli.conftest import Ran, claim_one, fail_to_dlq, insert, run_awa

Awa = Callable[..., Ran]


# -- migrate ----------------------------------------------------------------------------------


def test_migrate_creates_the_schema_once_and_then_has_nothing_to_do(empty_database: str) -> None:
    first = run_awa("migrate", "--json", url=empty_database).json
    assert first["applied"] == list(range(1, LATEST_VERSION + 1))
    assert first["version"] == LATEST_VERSION
    again = run_awa("migrate", "--json", url=empty_database).json
    assert again == {"applied": [], "version": LATEST_VERSION}
    human = run_awa("migrate", url=empty_database)
    assert human.code == 0
    assert f"already at version {LATEST_VERSION}" in human.stdout


def test_migrate_sql_prints_the_migrations_without_a_database() -> None:
    shown = run_awa("migrate", "--sql", url=None)
    assert shown.code == 0, shown.stderr
    assert "migration 0001_initial" in shown.stdout
    assert "CREATE TABLE awa.jobs" in shown.stdout
    document = run_awa("migrate", "--sql", "--json", url=None).json
    [first] = document["migrations"][:1]
    assert first["version"] == 1
    assert "CREATE TABLE awa.jobs" in first["sql"]
    assert len(first["checksum"]) == 64


def test_migrate_sql_prints_the_migrations_of_the_store_the_url_names(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    shown = run_awa("migrate", "--sql", url=url)
    assert shown.code == 0, shown.stderr
    assert "awa migrations for SQLite" in shown.stdout
    assert "CREATE TABLE awa_jobs" in shown.stdout
    assert "CREATE TABLE awa.jobs" not in shown.stdout
    assert not (tmp_path / "jobs.db").exists(), "printing the SQL created the file"
    document = run_awa("migrate", "--sql", "--json", url=url).json
    assert document["store"] == "sqlite"
    assert "CREATE TABLE awa_jobs" in document["migrations"][0]["sql"]
    postgres = run_awa("migrate", "--sql", "--json", url="postgresql://nobody@127.0.0.1:1/x").json
    assert postgres["store"] == "postgresql"
    assert "CREATE TABLE awa.jobs" in postgres["migrations"][0]["sql"]


def test_a_database_without_the_schema_is_one_line_that_says_run_migrate(
    empty_database: str,
) -> None:
    ran = run_awa("job", "list", url=empty_database)
    ran.assert_one_line_error("no awa schema", "awa migrate")


# -- job --------------------------------------------------------------------------------------


def test_job_list_filters_by_state_kind_queue_and_limit(awa: Awa, store: PostgresStore) -> None:
    insert(store, "send_email", queue="email")
    insert(store, "send_email", queue="email")
    insert(store, "resize", queue="media")
    claim_one(store, "email")  # job 1 is running now

    def ids(*args: str) -> list[int]:
        return [job["id"] for job in awa("job", "list", "--json", *args).json["jobs"]]

    assert ids() == [3, 2, 1]  # newest first
    assert ids("--queue", "media") == [3]
    assert ids("--kind", "send_email") == [2, 1]
    assert ids("--state", "running") == [1]
    assert ids("--state", "available", "--queue", "email") == [2]
    assert ids("--limit", "2") == [3, 2]
    assert ids("--limit", "2", "--before-id", "2") == [1]  # the next page
    job = awa("job", "list", "--json", "--queue", "media").json["jobs"][0]
    assert job["kind"] == "resize"
    assert job["state"] == "available"
    assert job["attempt"] == 0
    assert job["max_attempts"] == 25
    assert job["created_at"].endswith("+00:00")
    human = awa("job", "list")
    assert human.code == 0
    assert "resize" in human.stdout
    assert "3 job(s)" in human.stdout


def test_job_list_says_how_many_more_jobs_match_than_it_shows(
    awa: Awa, store: PostgresStore
) -> None:
    for _ in range(5):
        insert(store, "send_email", queue="email")
    insert(store, "resize", queue="media")
    shown = awa("job", "list", "--limit", "2", "--queue", "email")
    assert "2 of 5 job(s), newest first; next page: --before-id 4" in shown.stdout
    page = awa("job", "list", "--limit", "2", "--queue", "email", "--before-id", "4").stdout
    assert "2 of 5 job(s), newest first; next page: --before-id 2" in page
    last = awa("job", "list", "--limit", "2", "--queue", "email", "--before-id", "2").stdout
    assert "1 of 5 job(s)" in last
    assert "next page" not in last
    assert "next page" not in awa("job", "list", "--limit", "5", "--queue", "email").stdout
    listed = awa("job", "list", "--json", "--limit", "4").json
    assert (len(listed["jobs"]), listed["total"], listed["next_before_id"]) == (4, 6, 3)
    whole = awa("job", "list", "--json", "--kind", "resize").json
    assert (whole["total"], whole["next_before_id"]) == (1, None)


def test_job_list_refuses_an_unknown_state_on_one_line(awa: Awa) -> None:
    awa("job", "list", "--state", "sleeping").assert_one_line_error("invalid choice", code=2)


def test_job_dump_shows_the_history_and_says_a_run_of_stale_heartbeats_is_the_process(
    awa: Awa, clocked_store: tuple[PostgresStore, ManualClock]
) -> None:
    store, clock = clocked_store
    insert(store, "transcode", queue="media", max_attempts=5)
    for _ in range(3):  # three attempts whose worker died: maintenance rescues each
        claim_one(store, "media")
        clock.advance(120)
        [rescued] = store.rescue(staleness_s=90)
        assert rescued.job.state is JobState.RETRYABLE
        clock.advance(3600)  # past the backoff
    dump = awa("job", "dump", "1", "--json").json
    assert dump["job"]["id"] == 1
    assert dump["job"]["state"] == "retryable"
    assert [e["attempt"] for e in dump["job"]["errors"]] == [1, 2, 3]
    assert all(e["error"].startswith("heartbeat stale") for e in dump["job"]["errors"])
    assert dump["error_rounds"] == [1, 1, 1]
    assert dump["dlq"] is None
    assert dump["points_at_process"] is True
    assert "3 attempts in a row" in dump["diagnosis"]
    assert "process" in dump["diagnosis"]
    human = awa("job", "dump", "1")
    assert human.code == 0
    assert "error history" in human.stdout
    assert human.stdout.count("heartbeat stale") >= 3
    diagnosis = [line for line in human.stdout.splitlines() if line.startswith("diagnosis:")]
    assert len(diagnosis) == 1
    assert "look at the process, not the handler" in diagnosis[0]


def test_job_dump_of_a_handler_that_raises_the_same_error_points_at_the_handler(
    awa: Awa, clocked_store: tuple[PostgresStore, ManualClock]
) -> None:
    store, clock = clocked_store
    store.set_dlq_enabled("email", True)
    insert(store, "send_email", queue="email", max_attempts=2)
    for _ in range(2):
        job = claim_one(store, "email")
        store.finish([Finish(job.lease, Fail("KeyError: 'to'", traceback="File x, line 1"))])
        clock.advance(3600)  # past the backoff
    dump = awa("job", "dump", "1", "--json").json
    assert dump["job"]["state"] == "failed"
    assert dump["dlq"]["reason"] == "max_attempts_exhausted"
    assert dump["points_at_process"] is False
    assert "KeyError: 'to'" in dump["diagnosis"]
    assert "handler" in dump["diagnosis"]
    assert "dead-letter" in awa("job", "dump", "1").stdout


def test_job_dump_of_a_job_without_repeats_has_no_diagnosis(awa: Awa, store: PostgresStore) -> None:
    insert(store)
    dump = awa("job", "dump", "1", "--json").json
    assert dump["job"]["errors"] == []
    assert dump["diagnosis"] is None
    assert "no errors recorded" in awa("job", "dump", "1").stdout


def test_job_dump_run_shows_one_attempt_with_its_traceback(
    awa: Awa, clocked_store: tuple[PostgresStore, ManualClock]
) -> None:
    store, clock = clocked_store
    insert(store, "send_email", queue="email", max_attempts=3)
    job = claim_one(store, "email")
    store.finish([Finish(job.lease, Fail("ValueError: bad address", traceback="Traceback-ish: x"))])
    clock.advance(3600)  # past the backoff
    claim_one(store, "email")  # attempt 2 is running now
    first = awa("job", "dump-run", "1", "--attempt", "1", "--json").json
    assert first["attempt"] == 1
    assert first["current"] is False
    assert [e["error"] for e in first["errors"]] == ["ValueError: bad address"]
    assert first["errors"][0]["traceback"] == "Traceback-ish: x"
    assert first["heartbeat_at"] is None
    current = awa("job", "dump-run", "1", "--json").json
    assert current["attempt"] == 2
    assert current["current"] is True
    assert current["state"] == "running"
    assert current["run_lease"] == 2
    assert current["errors"] == []
    assert current["heartbeat_at"] is not None
    human = awa("job", "dump-run", "1", "--attempt", "1")
    assert "ValueError: bad address" in human.stdout
    assert "Traceback-ish: x" in human.stdout
    awa("job", "dump-run", "1", "--attempt", "7").assert_one_line_error("attempts 1 to 2")


def test_job_cancel_cancels_and_a_second_cancel_is_not_cancellable(
    awa: Awa, store: PostgresStore
) -> None:
    insert(store)
    cancelled = awa("job", "cancel", "1", "--json").json["job"]
    assert cancelled["state"] == "cancelled"
    assert store.get_job(1).state is JobState.CANCELLED
    awa("job", "cancel", "1").assert_one_line_error("job 1 is cancelled", "not cancellable")


def test_job_cancel_of_a_completed_job_is_not_cancellable_and_changes_nothing(
    awa: Awa, store: PostgresStore
) -> None:
    insert(store, queue="email")
    job = claim_one(store, "email")
    store.finish([Finish(job.lease, Complete())])
    before = store.get_job(1)
    awa("job", "cancel", "1").assert_one_line_error("completed", "not cancellable")
    assert store.get_job(1) == before


def test_job_retry_gives_a_cancelled_job_a_fresh_attempt_budget(
    awa: Awa, store: PostgresStore
) -> None:
    insert(store, queue="email")
    claim_one(store, "email")
    store.cancel(1)
    retried = awa("job", "retry", "1", "--json").json["job"]
    assert retried["state"] == "available"
    assert retried["attempt"] == 0
    assert retried["run_lease"] == 1  # never goes down
    human = awa("job", "retry", "1")
    human.assert_one_line_error("available")


def test_unknown_job_ids_fail_on_one_line_for_every_job_command(awa: Awa) -> None:
    for command in ("dump", "dump-run", "cancel", "retry"):
        awa("job", command, "4242").assert_one_line_error("job 4242 not found")
    awa("dlq", "retry", "4242").assert_one_line_error("job 4242 not found")


def test_a_job_id_that_is_not_a_number_is_a_usage_error(awa: Awa) -> None:
    awa("job", "dump", "abc").assert_one_line_error("whole number", code=2)


# -- queue ------------------------------------------------------------------------------------


def test_queue_pause_resume_and_stats(awa: Awa, store: PostgresStore) -> None:
    insert(store, queue="email")
    insert(store, queue="email")
    fail_to_dlq(store, "media", "resize")
    assert awa("queue", "pause", "email", "--json").json == {"queue": "email", "paused": True}
    assert store.claim("email", limit=10) == []  # paused: no claims
    stats = {q["queue"]: q for q in awa("queue", "stats", "--json").json["queues"]}
    assert stats["email"]["paused"] is True
    assert stats["email"]["counts"]["available"] == 2
    assert stats["email"]["oldest_available_at"] is not None
    assert stats["email"]["oldest_available_age_s"] >= 0
    assert stats["media"]["dlq_depth"] == 1
    assert stats["media"]["dlq_enabled"] is True
    assert set(stats["email"]["counts"]) == {s.value for s in JobState}
    human = awa("queue", "stats")
    assert "PAUSED" in human.stdout
    only = awa("queue", "stats", "--queue", "media", "--json").json["queues"]
    assert [q["queue"] for q in only] == ["media"]
    assert awa("queue", "resume", "email", "--json").json == {"queue": "email", "paused": False}
    assert len(store.claim("email", limit=10)) == 2
    assert "resumed" in awa("queue", "resume", "email").stdout


def test_queue_config_sets_flow_limits_and_stats_shows_live_against_them(
    awa: Awa, store: PostgresStore
) -> None:
    done = awa("queue", "config", "api", "--concurrency-limit", "2", "--rate-limit", "200,50")
    assert done.code == 0, done.stderr
    assert "at most 2 live at once, 200/s, burst 50" in " ".join(done.stdout.split())
    store.insert([NewJob(kind="call", queue="api") for _ in range(5)])
    assert len(store.claim("api", limit=5)) == 2
    [stats] = awa("queue", "stats", "--queue", "api", "--json").json["queues"]
    assert (stats["live"], stats["concurrency_limit"], stats["rate_limit"]) == (
        2,
        2,
        {"per_second": 200.0, "burst": 50},
    )
    assert "2/2, 200/s, burst 50" in awa("queue", "stats").stdout
    removed = awa("queue", "config", "api", "--concurrency-limit", "none", "--json").json
    assert (removed["concurrency_limit"], removed["rate_limit"]) == (
        None,
        {"per_second": 200.0, "burst": 50},
    )
    refused = awa("queue", "config", "api", "--concurrency-limit", "0")
    assert refused.code != 0
    assert refused.stderr.strip().splitlines() == [
        "awa: error: concurrency_limit must be an integer from 1 to 1000000 or None, got 0"
    ]
    bad = awa("queue", "config", "api", "--rate-limit", "fast")
    assert bad.code != 0
    assert "PER_SECOND,BURST" in bad.stderr
    assert store.configure_queue("api", dlq_enabled=False).concurrency_limit is None


def test_queue_config_sets_key_limits_and_stats_shows_them(awa: Awa, store: PostgresStore) -> None:
    done = awa(
        "queue", "config", "api", "--key-concurrency-limit", "2", "--key-rate-limit", "1.5,3"
    )
    assert done.code == 0, done.stderr
    assert "per concurrency key at most 2 live at once, 1.5/s, burst 3" in " ".join(
        done.stdout.split()
    )
    store.insert([NewJob(kind="call", queue="api", concurrency_key="t") for _ in range(5)])
    assert len(store.claim("api", limit=5)) == 2
    [stats] = awa("queue", "stats", "--queue", "api", "--json").json["queues"]
    assert (stats["key_concurrency_limit"], stats["key_rate_limit"]) == (
        2,
        {"per_second": 1.5, "burst": 3},
    )
    assert "key 2, key 1.5/s, burst 3" in awa("queue", "stats").stdout
    removed = awa("queue", "config", "api", "--key-rate-limit", "none", "--json").json
    assert (removed["key_concurrency_limit"], removed["key_rate_limit"]) == (2, None)
    refused = awa("queue", "config", "api", "--key-concurrency-limit", "-1")
    assert refused.code != 0
    assert refused.stderr.strip().splitlines() == [
        "awa: error: key_concurrency_limit must be an integer from 1 to 1000000 or None, got -1"
    ]
    assert store.configure_queue("api", dlq_enabled=False).key_concurrency_limit == 2


def test_queue_config_sets_what_every_worker_reads_and_stats_shows_it(
    awa: Awa, store: PostgresStore
) -> None:
    done = awa("queue", "config", "media", "--dlq", "on", "--finished-retention", "7d")
    assert done.code == 0, done.stderr
    assert " ".join(done.stdout.split()) == (
        "queue media: dead-letter queue on; completed jobs kept 7d, failed and cancelled jobs"
        " kept the workers' default, dead letters kept the workers' default (every worker"
        " reads these from the database)"
    )
    changed = awa("queue", "config", "media", "--dlq-retention", "12h", "--json").json
    assert changed == {
        "queue": "media",
        "paused": False,
        "dlq_enabled": True,
        "finished_retention_s": 7 * 86400.0,
        "dlq_retention_s": 43200.0,
        "failed_retention_s": None,
        "concurrency_limit": None,
        "rate_limit": None,
        "key_concurrency_limit": None,
        "key_rate_limit": None,
    }
    assert "7d/default/12h" in awa("queue", "stats").stdout
    failed = awa("queue", "config", "media", "--failed-retention", "30d", "--json").json
    assert failed["failed_retention_s"] == 30 * 86400.0
    [stats] = awa("queue", "stats", "--queue", "media", "--json").json["queues"]
    kept = ("finished_retention_s", "failed_retention_s", "dlq_retention_s")
    assert (stats["dlq_enabled"], *(stats[k] for k in kept)) == (
        True,
        604800.0,
        2592000.0,
        43200.0,
    )
    assert "7d/30d/12h" in awa("queue", "stats").stdout
    assert awa("queue", "config", "media", "--dlq", "off", "--json").json["dlq_enabled"] is False


def test_queue_config_refuses_nothing_to_set_and_bad_values_in_one_line(awa: Awa) -> None:
    awa("queue", "config", "media").assert_one_line_error("nothing to set", code=2)
    awa("queue", "config", "media", "--dlq", "maybe").assert_one_line_error(
        "expected on or off", code=2
    )
    awa("queue", "config", "media", "--finished-retention", "7w").assert_one_line_error(
        "a duration is seconds", code=2
    )
    awa("queue", "config", "media", "--dlq-retention", "0").assert_one_line_error(
        "more than 0", code=2
    )
    awa("queue", "config", "media", "--failed-retention", "0s").assert_one_line_error(
        "more than 0", code=2
    )
    awa("queue", "config", "Bad Queue", "--dlq", "on").assert_one_line_error(
        "invalid queue name", code=1
    )
    assert awa("queue", "stats", "--json").json == {"queues": []}


def test_queue_stats_warns_of_kinds_waiting_where_no_live_worker_handles_them(
    awa: Awa, store: PostgresStore
) -> None:
    insert(store, "charge_card")  # a producer that did not know the kind's queue
    insert(store, "charge_card")
    insert(store, "charge_card", queue="payments")
    store.record_worker("worker-1", {"payments": ["charge_card"]}, ttl_s=60)
    stats = {q["queue"]: q for q in awa("queue", "stats", "--json").json["queues"]}
    [waiting] = stats["default"]["unhandled_kinds"]
    assert (waiting["kind"], waiting["runnable"]) == ("charge_card", 2)
    assert stats["payments"]["unhandled_kinds"] == []
    human = awa("queue", "stats").stdout
    assert "warning: 2 charge_card job(s) wait on queue default (oldest " in human
    assert "no live worker there handles charge_card" in human
    assert "payments (oldest" not in human
    only = awa("queue", "stats", "--queue", "payments").stdout
    assert "warning" not in only
    store.record_worker("worker-2", {"default": ["charge_card"]}, ttl_s=60)
    assert "warning" not in awa("queue", "stats").stdout


# -- dlq --------------------------------------------------------------------------------------


def test_dlq_list_and_depth(awa: Awa, store: PostgresStore) -> None:
    fail_to_dlq(store, "media", "resize", "image too large")
    fail_to_dlq(store, "media", "thumbnail")
    fail_to_dlq(store, "email", "send_email")
    entries = awa("dlq", "list", "--json").json["entries"]
    assert [(e["job"]["id"], e["reason"]) for e in entries] == [  # newest first
        (3, "max_attempts_exhausted"),
        (2, "max_attempts_exhausted"),
        (1, "max_attempts_exhausted"),
    ]
    assert entries[2]["job"]["errors"][0]["error"] == "ValueError: image too large"
    assert entries[0]["dlq_at"].endswith("+00:00")
    assert [
        e["job"]["id"] for e in awa("dlq", "list", "--json", "--queue", "media").json["entries"]
    ] == [2, 1]
    assert [
        e["job"]["id"] for e in awa("dlq", "list", "--json", "--before-id", "3").json["entries"]
    ] == [2, 1]
    assert [
        e["job"]["id"] for e in awa("dlq", "list", "--json", "--kind", "thumbnail").json["entries"]
    ] == [2]
    assert len(awa("dlq", "list", "--json", "--limit", "1").json["entries"]) == 1
    assert awa("dlq", "depth", "--json").json == {"total": 3, "queues": {"email": 1, "media": 2}}
    assert awa("dlq", "depth", "--queue", "email", "--json").json == {
        "total": 1,
        "queues": {"email": 1},
    }
    human = awa("dlq", "list")
    assert "max_attempts_exhausted" in human.stdout
    assert "3 dead-letter entries" in human.stdout


def test_dlq_retry_keeps_the_lease_and_resets_the_attempt(awa: Awa, store: PostgresStore) -> None:
    fail_to_dlq(store, "media", "resize")
    job = awa("dlq", "retry", "1", "--json").json["job"]
    assert job["state"] == "available"
    assert job["attempt"] == 0
    assert job["run_lease"] == 1
    assert len(job["errors"]) == 1  # history kept
    assert store.list_dlq(queue="media") == []
    awa("dlq", "retry", "1").assert_one_line_error("job 1 is not in the dead-letter queue")


def test_dlq_retry_bulk_retries_only_the_filter(awa: Awa, store: PostgresStore) -> None:
    fail_to_dlq(store, "media", "resize")
    fail_to_dlq(store, "media", "thumbnail")
    fail_to_dlq(store, "email", "send_email")
    done = awa("dlq", "retry-bulk", "--queue", "media", "--kind", "resize", "--json").json
    assert done["retried"] == 1
    assert [j["id"] for j in done["jobs"]] == [1]
    done = awa("dlq", "retry-bulk", "--queue", "media", "--json").json
    assert [j["id"] for j in done["jobs"]] == [2]
    assert [e.job.id for e in store.list_dlq()] == [3]
    assert "retried 0" in awa("dlq", "retry-bulk", "--kind", "nothing_here").stdout


def test_bulk_commands_refuse_an_empty_filter_and_change_nothing(
    awa: Awa, store: PostgresStore
) -> None:
    fail_to_dlq(store, "media", "resize")
    awa("dlq", "retry-bulk").assert_one_line_error("--queue", "--all", code=2)
    awa("dlq", "purge", "--yes").assert_one_line_error("--queue", "--all", code=2)
    assert [e.job.id for e in store.list_dlq()] == [1]


def test_retry_bulk_with_all_needs_yes_when_stdin_is_not_a_terminal(
    awa: Awa, store: PostgresStore
) -> None:
    fail_to_dlq(store, "media", "resize")
    awa("dlq", "retry-bulk", "--all").assert_one_line_error("--yes", "not a terminal", code=2)
    assert len(store.list_dlq()) == 1
    assert awa("dlq", "retry-bulk", "--all", "--yes", "--json").json["retried"] == 1


def test_purge_without_yes_on_a_pipe_is_refused_and_deletes_nothing(
    awa: Awa, store: PostgresStore
) -> None:
    fail_to_dlq(store, "media", "resize")
    awa("dlq", "purge", "--queue", "media", stdin="y\n").assert_one_line_error(
        "--yes", "not a terminal", code=2
    )
    assert len(store.list_dlq()) == 1


def test_purge_with_yes_deletes_the_filter_only(awa: Awa, store: PostgresStore) -> None:
    fail_to_dlq(store, "media", "resize")
    fail_to_dlq(store, "email", "send_email")
    assert awa("dlq", "purge", "--queue", "media", "--yes", "--json").json == {"purged": 1}
    assert [e.job.id for e in store.list_dlq()] == [2]
    assert awa("dlq", "purge", "--all", "--yes", "--json").json == {"purged": 1}
    assert store.list_dlq() == []
    with store.pool.connection() as conn:  # purged for good: not back among the jobs
        assert conn.execute("SELECT count(*) FROM awa.jobs").fetchone() == (0,)


class _Terminal(io.StringIO):
    """A stdin that says it is a terminal, with the operator's answer in it."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "purged"), [("y\n", True), ("n\n", False), ("\n", False)])
def test_purge_on_a_terminal_asks_and_only_yes_deletes(
    db_url: str, store: PostgresStore, answer: str, purged: bool
) -> None:
    fail_to_dlq(store, "media", "resize")
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(
        ["--database-url", db_url, "dlq", "purge", "--queue", "media"],
        stdout=stdout,
        stderr=stderr,
        stdin=_Terminal(answer),
    )
    assert "permanently delete 1 dead-letter entries (queue=media)? [y/N]" in stderr.getvalue()
    assert code == (0 if purged else 2)
    assert len(store.list_dlq()) == (0 if purged else 1)


# -- callback ---------------------------------------------------------------------------------


def _waiting_callback(store: PostgresStore, queue: str = "email") -> str:
    insert(store, queue=queue)
    job = claim_one(store, queue)
    registered = store.register_callback(job.lease, timeout_s=600)
    callback_id = registered.job.callback_id  # type: ignore[union-attr]
    assert callback_id is not None
    return callback_id


def test_callback_complete_stores_the_payload(awa: Awa, store: PostgresStore) -> None:
    callback_id = _waiting_callback(store)
    done = awa("callback", "complete", callback_id, "--payload", '{"ok": true}', "--json").json
    assert done["callback_id"] == callback_id
    assert done["job"]["state"] == "completed"
    assert done["job"]["callback_result"] == {"ok": True}
    awa("callback", "complete", callback_id).assert_one_line_error("not found")


def test_callback_fail_records_the_error(awa: Awa, store: PostgresStore) -> None:
    callback_id = _waiting_callback(store)
    failed = awa("callback", "fail", callback_id, "--error", "card declined", "--json").json["job"]
    assert failed["state"] == "failed"
    assert failed["errors"][-1]["error"] == "card declined"


def test_callback_resume_hands_the_payload_to_the_running_handler(
    awa: Awa, store: PostgresStore
) -> None:
    callback_id = _waiting_callback(store)
    resumed = awa("callback", "resume", callback_id, "--payload", "[1, 2]", "--json").json["job"]
    assert resumed["state"] == "running"
    assert resumed["callback_result"] == [1, 2]


def test_callback_retry_starts_the_job_again_from_scratch(awa: Awa, store: PostgresStore) -> None:
    callback_id = _waiting_callback(store)
    job = store.get_job(1)
    assert job.callback_id is not None
    assert job.callback_timeout_at is not None
    token = CallbackToken(job.callback_id, job.lease, job.callback_timeout_at)
    [parked] = store.finish([Finish(job.lease, WaitForCallback(token))])  # the handler parks
    assert parked.job.state is JobState.WAITING_EXTERNAL  # type: ignore[union-attr]
    retried = awa("callback", "retry", callback_id, "--json").json["job"]
    assert retried["state"] == "available"
    assert retried["attempt"] == 0
    assert retried["callback_id"] is None


def test_callback_with_bad_payload_json_fails_on_one_line_and_changes_nothing(
    awa: Awa, store: PostgresStore
) -> None:
    callback_id = _waiting_callback(store)
    before = store.get_job(1)
    awa("callback", "complete", callback_id, "--payload", "{not json").assert_one_line_error(
        "--payload is not valid JSON", code=2
    )
    assert store.get_job(1) == before


def test_unknown_callback_id_fails_on_one_line(awa: Awa) -> None:
    for verb in ("complete", "fail", "resume", "retry"):
        awa("callback", verb, "no-such-callback").assert_one_line_error(
            "callback no-such-callback not found"
        )


# -- where the database is --------------------------------------------------------------------


def test_no_database_reachable_fails_on_one_line() -> None:
    ran = run_awa("job", "list", url="postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=3")
    ran.assert_one_line_error("cannot connect to PostgreSQL at 127.0.0.1:1")


def test_no_database_given_fails_on_one_line() -> None:
    run_awa("queue", "stats", url=None).assert_one_line_error("AWA_DATABASE_URL")


def test_the_url_comes_from_the_flag_then_awa_database_url_then_database_url(
    db_url: str, store: PostgresStore
) -> None:
    insert(store)
    bad = "postgresql://postgres@127.0.0.1:1/nowhere"
    by_flag = run_awa("--database-url", db_url, "job", "list", "--json", url=bad)
    assert [j["id"] for j in by_flag.json["jobs"]] == [1]
    after_command = run_awa("job", "list", "--database-url", db_url, "--json", url=bad)
    assert [j["id"] for j in after_command.json["jobs"]] == [1]
    fallback = run_awa("job", "list", "--json", url=None, env={"DATABASE_URL": db_url})
    assert [j["id"] for j in fallback.json["jobs"]] == [1]
    preferred = run_awa(
        "job", "list", url=None, env={"AWA_DATABASE_URL": bad, "DATABASE_URL": db_url}
    )
    preferred.assert_one_line_error("cannot connect")


def test_the_console_script_and_python_m_awa_cli_run_the_same_main(db_url: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "awa.cli", "--database-url", db_url, "dlq", "depth", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert '"total": 0' in done.stdout
