"""``awa cron``, the bulk job and queue commands, and ``dlq purge ID``, as real subprocesses."""

from __future__ import annotations

from collections.abc import Callable

from awa.adapters.postgres import PostgresStore
from awa.domain import Fail, JobState, NewJob, Schedule
from awa.ports import Finish
from tests.cli.conftest import Ran, claim_one, fail_to_dlq, insert

Awa = Callable[..., Ran]


def _fail(store: PostgresStore, queue: str, kind: str) -> int:
    insert(store, kind, queue=queue)
    job = claim_one(store, queue)
    store.finish([Finish(job.lease, Fail("boom", terminal=True))])
    return job.id


def test_cron_list_pause_resume_trigger_remove(awa: Awa, store: PostgresStore) -> None:
    nightly = Schedule(
        name="nightly",
        cron="0 3 * * *",
        timezone="Europe/Paris",
        job=NewJob(kind="report", queue="reports", args={"day": 1}),
    )
    store.register_schedules([nightly])
    [listed] = awa("cron", "list", "--json").json["schedules"]
    assert (listed["name"], listed["cron"], listed["timezone"]) == (
        "nightly",
        "0 3 * * *",
        "Europe/Paris",
    )
    assert listed["timing"] == "At 03:00 every day (Europe/Paris)"
    assert (listed["kind"], listed["queue"], listed["paused"]) == ("report", "reports", False)
    assert listed["next_fire_at"].endswith("+00:00")
    human = awa("cron", "list")
    assert "nightly" in human.stdout
    assert "At 03:00 every day (Europe/Paris)" in human.stdout
    assert "1 schedule(s)" in human.stdout

    assert awa("cron", "pause", "nightly", "--json").json["schedule"]["paused"] is True
    assert "PAUSED" in awa("cron", "list").stdout
    resumed = awa("cron", "resume", "nightly")
    assert "schedule nightly resumed; next fire" in resumed.stdout

    triggered = awa("cron", "trigger", "nightly", "--json").json
    assert triggered["schedule"] == "nightly"
    assert triggered["job"]["metadata"]["periodic_name"] == "nightly"
    assert triggered["job"]["state"] == "available"
    assert [j.kind for j in store.list_jobs()] == ["report"]

    assert "removed" in awa("cron", "remove", "nightly").stdout
    assert awa("cron", "list", "--json").json == {"schedules": []}
    awa("cron", "pause", "nightly").assert_one_line_error("periodic schedule 'nightly' not found")
    awa("cron", "trigger", "no such").assert_one_line_error("invalid schedule name")


def test_job_retry_failed_and_discard_failed(awa: Awa, store: PostgresStore) -> None:
    resize = [_fail(store, "media", "resize"), _fail(store, "media", "resize")]
    mail = _fail(store, "email", "send_email")
    refused = awa("job", "retry-failed")
    refused.assert_one_line_error("refusing to retry every failed job", "--all", code=2)
    retried = awa("job", "retry-failed", "--kind", "resize", "--json").json
    assert retried["retried"] == 2
    assert sorted(j["id"] for j in retried["jobs"]) == resize
    assert all(j["state"] == "available" and j["attempt"] == 0 for j in retried["jobs"])

    awa("job", "discard-failed", "--queue", "email").assert_one_line_error("without --yes", code=2)
    assert store.get_job(mail).state is JobState.FAILED
    assert awa("job", "discard-failed", "--queue", "email", "--yes", "--json").json == {
        "discarded": 1
    }
    assert [j.id for j in store.list_jobs()] == sorted(resize, reverse=True)


def test_queue_drain_cancels_what_waits_and_leaves_running_work(
    awa: Awa, store: PostgresStore
) -> None:
    for _ in range(3):
        insert(store, "resize", queue="media")
    running = claim_one(store, "media")
    awa("queue", "drain", "media").assert_one_line_error("without --yes", code=2)
    drained = awa("queue", "drain", "media", "--yes", "--json").json
    assert drained == {"queue": "media", "cancelled": 2}
    states = {j.id: j.state for j in store.list_jobs()}
    assert states.pop(running.id) is JobState.RUNNING
    assert set(states.values()) == {JobState.CANCELLED}


def test_dlq_purge_of_one_entry(awa: Awa, store: PostgresStore) -> None:
    first = fail_to_dlq(store, "media", "resize")
    second = fail_to_dlq(store, "media", "resize")
    awa("dlq", "purge", str(first.id), "--all").assert_one_line_error("not both", code=2)
    done = awa("dlq", "purge", str(first.id), "--yes", "--json").json
    assert done == {"purged": 1, "id": first.id}
    assert [e.job.id for e in store.list_dlq()] == [second.id]
    [alive] = store.insert([NewJob(kind="resize")])
    awa("dlq", "purge", str(alive.id), "--yes").assert_one_line_error(
        f"job {alive.id} is not in the dead-letter queue (it is available)"
    )
