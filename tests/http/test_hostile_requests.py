"""Requests an attacker or a broken sender makes, through real uvicorn servers, once per store
(memory and PostgreSQL).

A wrong signature is refused whatever ``allow_unsigned`` says. A value the receiver, the domain
or the store refuses is a ``400`` (never a ``503`` a sender would retry forever, never a
``500``), with a one-line JSON body; and nothing changes.
"""

from __future__ import annotations

import json
import logging
import time

import httpx
import pytest

from awa.domain import JobState
from awa.http import SIGNATURE_HEADER, TIMESTAMP_HEADER, callback_url, sign_request
from tests.http.conftest import SECRET, Receiver, make_pending, post, serving_command


def assert_refused(answer: httpx.Response, status: int, says: str) -> str:
    """The refusal a sender should get: the status, one line of JSON, one ``error`` key."""
    assert answer.status_code == status, answer.text
    assert "\n" not in answer.text.strip()
    document = answer.json()
    assert list(document) == ["error"], document
    assert says in document["error"], document["error"]
    return str(document["error"])


# -- item 6: a signature that does not verify is refused, always ------------------------------


def wrong_signature(how: str, callback_id: str, body: bytes) -> dict[str, str]:
    """Signature headers for ``body`` that do not verify with ``SECRET``."""
    now = str(int(time.time()))
    if how == "another secret":
        return sign_request(b"not-the-secret", callback_id, body, action="complete")
    if how == "another body":
        return sign_request(SECRET, callback_id, b'{"payload": 0}', action="complete")
    if how == "another action":
        return sign_request(SECRET, callback_id, body, action="resume")
    if how == "garbage":
        return {SIGNATURE_HEADER: "v1=00", TIMESTAMP_HEADER: now}
    if how == "empty":
        return {SIGNATURE_HEADER: "", TIMESTAMP_HEADER: now}
    assert how == "no timestamp"
    return {SIGNATURE_HEADER: "v1=" + "0" * 64}


WRONG_SIGNATURES = [
    "another secret", "another body", "another action", "garbage", "empty", "no timestamp"
]  # fmt: skip


@pytest.mark.parametrize("how", WRONG_SIGNATURES)
@pytest.mark.parametrize("which", ["trusting", "secretless"])
def test_wrong_signature_is_refused_even_with_allow_unsigned(
    receiver: Receiver, which: str, how: str
) -> None:
    job = receiver.pending()
    cid = job.callback_id or ""
    body = json.dumps({"payload": {"amount": 10}}).encode()
    headers = {"content-type": "application/json", **wrong_signature(how, cid, body)}
    base = getattr(receiver, which)
    answer = httpx.post(callback_url(base, cid, "complete"), content=body, headers=headers)
    assert_refused(answer, 401, "")
    assert receiver.store.get_job(job.id) == job


def test_an_unsigned_request_is_accepted_with_allow_unsigned_with_or_without_a_secret(
    receiver: Receiver,
) -> None:
    for base in (receiver.trusting, receiver.secretless):
        job = receiver.pending()
        answer = post(base, job.callback_id or "", "complete", {"payload": 1}, secret=None)
        assert answer.status_code == 200, answer.text
        assert receiver.store.get_job(job.id).state is JobState.COMPLETED


def test_a_signed_request_to_a_receiver_without_a_secret_says_it_cannot_be_checked(
    receiver: Receiver,
) -> None:
    job = receiver.pending()
    answer = post(receiver.secretless, job.callback_id or "", "complete", {}, secret=SECRET)
    assert_refused(answer, 401, "no secret")
    assert receiver.store.get_job(job.id) == job


def test_awa_callbacks_serve_allow_unsigned_refuses_a_wrong_signature(
    http_database: str, postgres_receiver: Receiver
) -> None:
    store = postgres_receiver.store
    forged, honest = make_pending(store), make_pending(store)
    env = {"AWA_DATABASE_URL": http_database, "AWA_CALLBACK_SECRET": ""}
    with serving_command("--allow-unsigned", env=env) as base:
        bad = post(base, forged.callback_id or "", "complete", {}, secret=b"a guess")
        ok = post(base, honest.callback_id or "", "complete", {}, secret=None)
    assert_refused(bad, 401, "")
    assert store.get_job(forged.id) == forged
    assert ok.status_code == 200, ok.text


# -- item 7: a bad value is a 400, whoever notices ------------------------------------------


def nested(depth: int) -> bytes:
    """A payload of ``depth`` lists, one inside the other."""
    return b'{"payload": ' + b"[" * depth + b"]" * depth + b"}"


HOSTILE_BODIES = [
    ("complete", b'{"payload": "a\\u0000b"}', "NUL"),
    ("resume", b'{"payload": {"key\\u0000": 1}}', "NUL"),
    ("complete", b'{"payload": ["\\udc80"]}', "surrogate"),
    ("fail", b'{"error": "declined\\u0000"}', "NUL"),
    ("complete", nested(5000), "nested deeper"),  # deeper than json.loads can recurse
    ("resume", nested(66), "nested deeper"),  # just past the domain's 64 levels
    ("heartbeat", b'{"timeout": 1e12}', "timeout must be"),  # 31,700 years
    ("heartbeat", b'{"timeout": 1e400}', "1e400"),  # inf once parsed
    ("heartbeat", b'{"timeout": NaN}', "NaN"),
    ("complete", b'{"payload": -Infinity}', "Infinity"),
    ("complete", b'{"payload": 1' + b"0" * 5000 + b"}", "number too long"),
]


@pytest.mark.parametrize(("action", "body", "says"), HOSTILE_BODIES)
def test_a_hostile_body_is_400_with_a_one_line_error_and_changes_nothing(
    receiver: Receiver,
    caplog: pytest.LogCaptureFixture,
    action: str,
    body: bytes,
    says: str,
) -> None:
    job = receiver.pending()
    with caplog.at_level(logging.INFO, logger="awa.http"):
        answer = post(receiver.signed, job.callback_id or "", action, body=body)
    assert_refused(answer, 400, says)
    assert receiver.store.get_job(job.id) == job
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_payload_as_deep_as_the_domain_allows_is_accepted(receiver: Receiver) -> None:
    job = receiver.pending()
    answer = post(receiver.signed, job.callback_id or "", "complete", body=nested(64))
    assert answer.status_code == 200, answer.text
    assert receiver.store.get_job(job.id).state is JobState.COMPLETED


@pytest.mark.parametrize("stamp", [b"\xb9\xb2\xb3", b"\xb2" * 10, b"17\xb9"])
def test_a_timestamp_of_digits_that_are_not_ascii_is_refused_on_one_line(
    receiver: Receiver, stamp: bytes
) -> None:
    # on the wire a header is bytes; Starlette reads them as Latin-1, so b"\xb9" is "¹", a
    # character str.isdigit() accepts and int() refuses
    job = receiver.pending()
    cid = job.callback_id or ""
    headers: dict[str, str | bytes] = dict(sign_request(SECRET, cid, b"{}", action="complete"))
    headers[TIMESTAMP_HEADER] = stamp
    for base in (receiver.signed, receiver.trusting):
        answer = httpx.post(callback_url(base, cid, "complete"), content=b"{}", headers=headers)
        assert_refused(answer, 401, "Unix time in whole seconds")
    assert receiver.store.get_job(job.id) == job


def test_an_error_body_is_one_line_and_bounded_whatever_the_sender_wrote(
    receiver: Receiver,
) -> None:
    job = receiver.pending()
    key = "line one\nline two " + "x" * 5000
    answer = post(receiver.signed, job.callback_id or "", "complete", {key: 1})
    error = assert_refused(answer, 400, "unknown key(s) line one line two")
    assert len(error) <= 500
    assert receiver.store.get_job(job.id) == job
