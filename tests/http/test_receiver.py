"""The HTTP callback receiver through a real uvicorn server on loopback, against PostgreSQL.

Every refused request (401, 404, 400) is checked to have changed nothing in the database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from awa.adapters.postgres import PostgresStore
from awa.domain import Job, JobState, ValidationError
from awa.http import SIGNATURE_HEADER, TIMESTAMP_HEADER, callback_url, create_app, sign_request
from tests.http.conftest import SECRET, post, serving_command

ROOT = Path(__file__).resolve().parents[2]
Pending = Callable[[], Job]


# -- the four actions, signed -----------------------------------------------------------------


def test_a_signed_complete_completes_the_job_with_its_payload(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    answer = post(signed_server, job.callback_id or "", "complete", {"payload": {"charge": "ch_1"}})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"callback_id": job.callback_id, "job_id": job.id, "state": "completed"}
    done = store.get_job(job.id)
    assert done.state is JobState.COMPLETED
    assert done.callback_result == {"charge": "ch_1"}


def test_a_signed_fail_fails_the_job_with_the_error(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    answer = post(signed_server, job.callback_id or "", "fail", {"error": "card declined"})
    assert answer.status_code == 200, answer.text
    failed = store.get_job(job.id)
    assert failed.state is JobState.FAILED
    assert failed.errors[-1].error == "card declined"


def test_a_signed_resume_hands_the_payload_to_the_running_handler(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    answer = post(signed_server, job.callback_id or "", "resume", {"payload": [1, 2, 3]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["state"] == "running"
    assert store.get_job(job.id).callback_result == [1, 2, 3]


def test_a_signed_heartbeat_pushes_the_callback_timeout_out(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    assert job.callback_timeout_at is not None
    answer = post(signed_server, job.callback_id or "", "heartbeat", {"timeout": 7200})
    assert answer.status_code == 200, answer.text
    extended = store.get_job(job.id)
    assert extended.callback_timeout_at is not None
    assert (extended.callback_timeout_at - job.callback_timeout_at).total_seconds() > 3000
    assert extended.state is JobState.RUNNING


# -- refused: nothing changes -----------------------------------------------------------------


def test_an_unsigned_request_is_refused_with_401(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    answer = post(signed_server, job.callback_id or "", "complete", {}, secret=None)
    assert answer.status_code == 401
    assert "unsigned" in answer.json()["error"]
    assert store.get_job(job.id) == job


def test_a_tampered_body_is_refused_with_401(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    cid = job.callback_id or ""
    signed_for = json.dumps({"payload": {"amount": 10}}).encode()
    headers = sign_request(SECRET, cid, signed_for, action="complete")
    sent = json.dumps({"payload": {"amount": 10000}}).encode()
    answer = httpx.post(callback_url(signed_server, cid, "complete"), content=sent, headers=headers)
    assert answer.status_code == 401
    assert answer.json()["error"] == "signature does not match"
    assert store.get_job(job.id) == job


def test_a_request_signed_with_another_secret_is_refused_with_401(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    answer = post(signed_server, job.callback_id or "", "complete", {}, secret=b"not-the-secret")
    assert answer.status_code == 401
    assert store.get_job(job.id) == job


def test_a_signature_for_another_action_is_refused_with_401(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    cid = job.callback_id or ""
    body = json.dumps({"payload": 1}).encode()
    as_resume = sign_request(SECRET, cid, body, action="resume")
    answer = httpx.post(
        callback_url(signed_server, cid, "complete"), content=body, headers=as_resume
    )
    assert answer.status_code == 401
    assert store.get_job(job.id) == job


# 30 s clear of the 300 s window, so a slow (loaded) server cannot bring the stamp back inside
@pytest.mark.parametrize("skew_s", [-330, +330, -86400])
def test_a_timestamp_outside_the_replay_window_is_refused_with_401(
    signed_server: str, store: PostgresStore, pending: Pending, skew_s: int
) -> None:
    job = pending()
    stamp = int(time.time()) + skew_s
    answer = post(signed_server, job.callback_id or "", "complete", {}, timestamp=stamp)
    assert answer.status_code == 401
    assert "replay window" in answer.json()["error"]
    assert store.get_job(job.id) == job


def test_a_replayed_request_cannot_resolve_the_callback_twice(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    cid = job.callback_id or ""
    body = json.dumps({"error": "declined"}).encode()
    headers = sign_request(SECRET, cid, body, action="fail")
    url = callback_url(signed_server, cid, "fail")
    assert httpx.post(url, content=body, headers=headers).status_code == 200
    after = store.get_job(job.id)
    replayed = httpx.post(url, content=body, headers=headers)  # inside the window: resolved
    assert replayed.status_code == 404
    assert store.get_job(job.id) == after


def test_a_malformed_timestamp_is_refused_with_401(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    cid = job.callback_id or ""
    headers = sign_request(SECRET, cid, b"{}", action="complete")
    headers[TIMESTAMP_HEADER] = "yesterday"
    answer = httpx.post(
        callback_url(signed_server, cid, "complete"), content=b"{}", headers=headers
    )
    assert answer.status_code == 401
    assert store.get_job(job.id) == job


def test_an_unknown_callback_id_is_404(signed_server: str) -> None:
    for action in ("complete", "fail", "resume", "heartbeat"):
        answer = post(signed_server, "no-such-callback", action, {})
        assert answer.status_code == 404, (action, answer.text)
        assert "not found" in answer.json()["error"]


@pytest.mark.parametrize(
    ("action", "body", "says"),
    [
        ("complete", b"{not json", "not JSON"),
        ("complete", b"\xff\xfe", "not JSON"),
        ("complete", b"[1, 2]", "JSON object"),
        ("complete", b'{"paylod": 1}', "unknown key(s) paylod"),
        ("fail", b'{"error": 42}', "error must be"),
        ("fail", b'{"error": "  "}', "error must be"),
        ("heartbeat", b'{"timeout": -5}', "timeout must be"),
        ("heartbeat", b'{"timeout": true}', "timeout must be"),
        ("heartbeat", b'{"timeout": "soon"}', "timeout must be"),
        ("resume", b'{"payload": "\\ud800"}', "surrogate"),
    ],
)
def test_a_bad_body_is_400_and_changes_nothing(
    signed_server: str, store: PostgresStore, pending: Pending, action: str, body: bytes, says: str
) -> None:
    job = pending()
    answer = post(signed_server, job.callback_id or "", action, body=body)
    assert answer.status_code == 400, answer.text
    assert says in answer.json()["error"]
    assert store.get_job(job.id) == job


def test_a_body_over_the_limit_is_413_and_changes_nothing(
    store: PostgresStore, pending: Pending
) -> None:
    from tests.http.conftest import serving

    job = pending()
    small = create_app(store, secret=SECRET, body_size_max=64)
    with serving(small) as base:
        body = json.dumps({"payload": "x" * 100}).encode()
        answer = post(base, job.callback_id or "", "complete", body=body)
    assert answer.status_code == 413
    assert store.get_job(job.id) == job


# -- exactly one wins -------------------------------------------------------------------------


def test_concurrent_resolutions_of_one_callback_have_exactly_one_winner(
    signed_server: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    cid = job.callback_id or ""
    contenders = 16
    start = threading.Barrier(contenders)
    statuses: list[int] = []
    lock = threading.Lock()

    def resolve(index: int) -> None:
        action = ("complete", "fail", "resume")[index % 3]
        document = {"error": f"no {index}"} if action == "fail" else {"payload": index}
        body = json.dumps(document).encode()
        headers = sign_request(SECRET, cid, body, action=action)
        with httpx.Client() as client:
            start.wait(timeout=10)
            status = client.post(
                callback_url(signed_server, cid, action), content=body, headers=headers
            ).status_code
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=resolve, args=(i,)) for i in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(statuses) == [200] + [404] * (contenders - 1)
    resolved = store.get_job(job.id)
    assert resolved.callback_id is None
    assert resolved.state in (JobState.COMPLETED, JobState.FAILED, JobState.RUNNING)


# -- unsigned on a trusted network ------------------------------------------------------------


def test_allow_unsigned_accepts_unsigned_requests_but_still_checks_signed_ones(
    unsigned_server: str, store: PostgresStore, pending: Pending
) -> None:
    forged, honest = pending(), pending()
    bad = post(unsigned_server, forged.callback_id or "", "complete", {}, secret=b"wrong")
    assert bad.status_code == 401
    assert store.get_job(forged.id) == forged
    ok = post(unsigned_server, honest.callback_id or "", "complete", {"payload": 1}, secret=None)
    assert ok.status_code == 200, ok.text
    assert store.get_job(honest.id).state is JobState.COMPLETED


def test_create_app_refuses_to_run_without_a_secret_unless_unsigned_is_allowed(
    store: PostgresStore,
) -> None:
    with pytest.raises(ValidationError, match="secret"):
        create_app(store, secret=None)
    with pytest.raises(ValidationError, match="non-empty"):
        create_app(store, secret=b"")
    with pytest.raises(ValidationError, match="client or a store"):
        create_app(object(), secret=SECRET)


def test_the_helpers_build_urls_and_headers_the_receiver_accepts() -> None:
    assert (
        callback_url("https://jobs.example.com/", "a/b c", "complete")
        == "https://jobs.example.com/callbacks/a%2Fb%20c/complete"
    )
    headers = sign_request(SECRET, "cb-1", b"{}", timestamp=1_700_000_000, action="fail")
    assert headers[TIMESTAMP_HEADER] == "1700000000"
    assert headers[SIGNATURE_HEADER].startswith("v1=")
    assert len(headers[SIGNATURE_HEADER]) == len("v1=") + 64
    with pytest.raises(ValidationError, match="action"):
        callback_url("https://x", "cb-1", "delete")


# -- the command ------------------------------------------------------------------------------


def test_awa_callbacks_serve_runs_the_receiver(
    http_database: str, store: PostgresStore, pending: Pending
) -> None:
    job = pending()
    env = {"AWA_DATABASE_URL": http_database, "AWA_CALLBACK_SECRET": "from-env"}
    with serving_command(env=env) as base:
        assert post(base, job.callback_id or "", "complete", {}).status_code == 401  # test secret
        answer = post(base, job.callback_id or "", "complete", {}, secret=b"from-env")
        assert answer.status_code == 200, answer.text
    assert store.get_job(job.id).state is JobState.COMPLETED


def test_awa_callbacks_serve_refuses_to_start_without_a_secret(http_database: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AWA_CALLBACK_SECRET"}
    env["AWA_DATABASE_URL"] = http_database
    done = subprocess.run(
        [sys.executable, "-m", "awa", "callbacks", "serve"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "AWA_CALLBACK_SECRET" in line
    assert "--allow-unsigned" in line
