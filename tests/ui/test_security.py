"""Who may see and steer: this machine only without a token; a token or basic-auth credentials
otherwise; a CSRF token on every state-changing request; user data never read as markup; the
security headers on every answer."""

from __future__ import annotations

import base64
import logging
import re

import pytest
from starlette.testclient import TestClient

from awa.adapters.memory import ManualClock, MemoryStore
from awa.cli import main
from awa.domain import Fail, JobState, NewJob, Schedule, ValidationError
from awa.ports import Finish
from awa.ui import create_app
from awa.ui.access import SESSION_MAX_AGE_S
from awa.ui.app import SECURITY_HEADERS
from awa.ui.csrf import from_this_site
from tests.ui.conftest import act, browser_client, csrf

TOKEN = "a-token-of-sufficient-length"
PAUSE = "/queues/media/pause"


@pytest.fixture
def store() -> MemoryStore:
    memory = MemoryStore(ManualClock())
    memory.insert([NewJob(kind="k", queue="media")])
    return memory


def paused(store: MemoryStore) -> bool:
    return any(s.queue == "media" and s.paused for s in store.queue_stats())


# -- no token: this machine only -----------------------------------------------------------------


def test_without_a_token_only_loopback_clients_are_served(store: MemoryStore) -> None:
    app = create_app(store)
    assert browser_client(app).get("/").status_code == 200
    assert browser_client(app, host="::1").get("/").status_code == 200
    outsider = browser_client(app, host="192.0.2.10")
    for answer in (outsider.get("/"), outsider.get("/static/awa.css"), outsider.post(PAUSE)):
        assert answer.status_code == 403
        assert "served to this machine only" in answer.text
    assert not paused(store)


def test_without_a_token_a_foreign_host_name_is_refused(store: MemoryStore) -> None:
    """A page whose own name was rebound to 127.0.0.1 (DNS rebinding) names itself in Host."""
    app = create_app(store)
    for host in ("localhost:8000", "127.0.0.1", "[::1]:8000"):
        assert browser_client(app).get("/", headers={"host": host}).status_code == 200
    for host in ("attacker.example:8000", "127.0.0.1.nip.io", ""):
        answer = browser_client(app).get("/", headers={"host": host})
        assert answer.status_code == 403, host


def test_allow_unauthenticated_serves_everyone(store: MemoryStore) -> None:
    app = create_app(store, allow_unauthenticated=True)
    assert browser_client(app, host="192.0.2.10").get("/").status_code == 200


# -- a token --------------------------------------------------------------------------------------


def test_a_token_is_asked_for_and_a_session_follows(store: MemoryStore) -> None:
    client = browser_client(create_app(store, token=TOKEN), host="192.0.2.10")
    page = client.get("/jobs?state=available")
    assert page.status_code == 303
    assert page.headers["location"] == "/login?next=%2Fjobs%3Fstate%3Davailable"
    login = client.get(page.headers["location"])
    assert login.status_code == 200
    fields = {"csrf": csrf_of(login.text), "next": "/jobs?state=available"}
    wrong = client.post("/login", data={**fields, "token": "not-the-token-at-all"})
    assert wrong.status_code == 401
    assert "That is not the dashboard's token" in wrong.text.replace("&#39;", "'")
    right = client.post("/login", data={**fields, "token": TOKEN})
    assert (right.status_code, right.headers["location"]) == (303, "/jobs?state=available")
    cookie = right.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert client.get("/jobs?state=available").status_code == 200
    assert act(client, PAUSE).status_code == 200
    assert paused(store)
    out = client.post("/logout", data=csrf(client))
    assert out.status_code == 303
    assert client.get("/").status_code == 303


def test_state_changing_requests_without_the_token_get_401(store: MemoryStore) -> None:
    client = browser_client(create_app(store, token=TOKEN))
    store.register_schedules([Schedule(name="nightly", cron="0 3 * * *", job=NewJob(kind="r"))])
    for path in (
        PAUSE,
        "/jobs/1/cancel",
        "/dlq/purge",
        "/dlq/retry",
        "/queues/count",
        "/periodic/nightly/pause",
        "/periodic/nightly/trigger",
        "/periodic/nightly/remove",
    ):
        answer = client.post(path, data={"all": "1"})
        assert answer.status_code == 401, path
    wrong = client.post(PAUSE, headers={"authorization": "Bearer not-the-token-at-all"})
    assert wrong.status_code == 401
    assert not paused(store)
    assert store.get_job(1).state is JobState.AVAILABLE
    assert [(r.name, r.paused) for r in store.list_schedules()] == [("nightly", False)]


def test_a_bearer_token_works_without_a_browser_session_or_csrf(store: MemoryStore) -> None:
    """Scripts: a browser never sends an Authorization: Bearer header by itself."""
    client = browser_client(create_app(store, token=TOKEN), host="192.0.2.10")
    headers = {"authorization": f"Bearer {TOKEN}"}
    assert client.get("/", headers=headers).status_code == 200
    assert client.post(PAUSE, headers=headers).status_code == 200
    assert paused(store)


def test_a_session_lapses_and_does_not_survive_a_new_token(store: MemoryStore) -> None:
    moment = [1_000_000.0]
    app = create_app(store, token=TOKEN, now=lambda: moment[0])
    client = browser_client(app)
    login = client.get("/login")
    client.post("/login", data={"csrf": csrf_of(login.text), "token": TOKEN, "next": "/"})
    assert client.get("/").status_code == 200
    session = client.cookies["awa_session"]
    other = browser_client(create_app(store, token=TOKEN + "-rotated"))
    other.cookies.set("awa_session", session)
    assert other.get("/").status_code == 303
    moment[0] += SESSION_MAX_AGE_S + 1
    assert client.get("/").status_code == 303
    forged = browser_client(app)
    forged.cookies.set("awa_session", f"v1.{int(moment[0])}.{'0' * 64}")
    assert forged.get("/").status_code == 303


def test_sign_in_never_sends_the_browser_to_another_site(store: MemoryStore) -> None:
    client = browser_client(create_app(store, token=TOKEN))
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example", "jobs"):
        login = client.get("/login")  # the form of this browser's session, as it is now
        answer = client.post(
            "/login", data={"csrf": csrf_of(login.text), "token": TOKEN, "next": target}
        )
        assert answer.headers["location"] == "/", target


def test_short_tokens_and_weak_credentials_are_refused() -> None:
    store = MemoryStore()
    with pytest.raises(ValidationError, match="at least 16 characters"):
        create_app(store, token="short")
    with pytest.raises(ValidationError, match="password of at least 12"):
        create_app(store, basic_auth=("ops", "short"))
    with pytest.raises(ValidationError, match="not both"):
        create_app(store, token=TOKEN, basic_auth=("ops", "a-long-password"))


# -- basic auth -----------------------------------------------------------------------------------


def test_basic_auth_asks_the_browser_and_checks_both_parts(store: MemoryStore) -> None:
    client = browser_client(create_app(store, basic_auth=("ops", "a-long-password")))
    asked = client.get("/")
    assert asked.status_code == 401
    assert asked.headers["www-authenticate"] == 'Basic realm="awa dashboard", charset="UTF-8"'

    def basic(user: str, password: str) -> dict[str, str]:
        encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
        return {"authorization": f"Basic {encoded}"}

    for user, password in (("ops", "wrong-password!"), ("root", "a-long-password"), ("", "")):
        assert client.get("/", headers=basic(user, password)).status_code == 401
    assert client.get("/", headers={"authorization": "Basic %%%"}).status_code == 401
    good = basic("ops", "a-long-password")
    assert client.post(PAUSE, headers=good).status_code == 403  # no CSRF token: refused
    assert not paused(store)
    client.headers.update(good)
    assert act(client, PAUSE).status_code == 200
    assert paused(store)


# -- CSRF -----------------------------------------------------------------------------------------


def test_a_post_without_a_matching_csrf_token_changes_nothing(store: MemoryStore) -> None:
    client = browser_client(create_app(store))
    for data in ({}, {"csrf": ""}, {"csrf": "0" * 64}):
        answer = client.post(PAUSE, data=data)
        assert answer.status_code == 403
        assert "the form has expired" in answer.text
    token = csrf(client)
    stranger = browser_client(create_app(store))  # its own cookie: the token is not for it
    assert stranger.post(PAUSE, data=token).status_code == 403
    cross = client.post(PAUSE, data=token, headers={"sec-fetch-site": "cross-site"})
    assert cross.status_code == 403
    assert "came from another site" in cross.text
    assert not paused(store)
    assert (
        client.post(PAUSE, data=token, headers={"sec-fetch-site": "same-origin"}).status_code == 200
    )


def test_another_apps_token_does_not_fit_this_apps_cookie(store: MemoryStore) -> None:
    """The token is an HMAC under a secret of the app: a cookie an attacker planted, with a
    token they computed, does not pass."""
    client = browser_client(create_app(store))
    client.cookies.set("awa_csrf", "planted")
    assert client.post(PAUSE, data={"csrf": "planted"}).status_code == 403
    assert not paused(store)


def test_a_large_form_is_refused(store: MemoryStore) -> None:
    client = browser_client(create_app(store))
    answer = client.post(PAUSE, data={**csrf(client), "x": "y" * 20_000})
    assert answer.status_code == 400
    assert "form larger than" in answer.text


# -- headers and user data -----------------------------------------------------------------------


def test_every_answer_carries_the_security_headers(store: MemoryStore) -> None:
    apps = [create_app(store), create_app(store, token=TOKEN)]
    client = browser_client(apps[0])
    answers = [
        client.get("/"),
        client.get("/jobs/1"),
        client.get("/jobs/99"),
        client.get("/static/live.js"),
        client.post(PAUSE),
        browser_client(apps[0], host="192.0.2.1").get("/"),
        browser_client(apps[1]).get("/"),
        browser_client(apps[1]).post(PAUSE),
    ]
    for answer in answers:
        for name, value in SECURITY_HEADERS.items():
            assert answer.headers[name] == value, (answer.url, name)
    csp = SECURITY_HEADERS["content-security-policy"]
    assert "'unsafe-inline'" not in csp
    assert "script-src 'self'" in csp


def test_no_page_has_an_inline_script_style_or_handler(store: MemoryStore) -> None:
    client = browser_client(create_app(store))
    store.register_schedules([Schedule(name="nightly", cron="0 3 * * *", job=NewJob(kind="r"))])
    pages = ("/", "/jobs", "/jobs/1", "/dlq", "/periodic")
    for path in (*pages, PAUSE, "/jobs/1/cancel", "/periodic/nightly/remove"):
        html = client.get(path).text
        assert re.findall(r"<script(?![^>]*\bsrc=)", html) == [], path
        for inline in (" style=", "<style", "javascript:"):
            assert inline not in html, (path, inline)
        assert not re.search(r"\son[a-z]+=", html), path


HOSTILE = {
    "html": "<script>window.__xss = 1</script>",
    "attribute": '" onmouseover="window.__xss=1" x="',
    "closing": "</pre></main><script>window.__xss=1</script>",
    "bidi": "\u202egnp.exe",
    "zero width": "a\u200bb\u2060c",
    "emoji and combining": "😀 e\u0301 \U0001f9d1\u200d\U0001f4bb",
    "controls": "bell\x07 escape\x1b[31m del\x7f c1\x85",
    "template": "{{ 7 * 7 }} {% raw %}",
}


def hostile_store() -> MemoryStore:
    store = MemoryStore(ManualClock())
    store.set_dlq_enabled("media", True)
    store.insert(
        [
            NewJob(
                kind="transcode",
                queue="media",
                args=HOSTILE,
                metadata={"<b>key</b>": "<i>value</i>"},
                tags=("<img src=x onerror=window.__xss=1>", "\u202etag"),
                max_attempts=1,
            )
        ]
    )
    [claimed] = store.claim("media", limit=1)
    store.finish(
        [
            Finish(
                claimed.lease,
                Fail("ValueError: <svg onload=window.__xss=1>", traceback="<script>x</script>"),
                progress={"percent": 50, "message": "<marquee>half</marquee>"},
            )
        ]
    )
    return store


def test_hostile_args_are_shown_as_text(store: MemoryStore) -> None:
    client = browser_client(create_app(hostile_store()))
    for path in (
        "/jobs/1",
        "/jobs",
        "/dlq",
        "/jobs?tag=%3Cimg%20src%3Dx%20onerror%3Dwindow.__xss%3D1%3E",
    ):
        html = client.get(path).text
        for markup in ("<script>window", "<svg", "<img src=x", "<marquee", 'onmouseover="w'):
            assert markup not in html, (path, markup)
    page = client.get("/jobs/1").text
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in page
    assert "&lt;svg onload=window.__xss=1&gt;" in page
    assert "{{ 7 * 7 }}" in page  # no template ran
    for control in ("\\u001b[31m", "\\u007f", "\\u0085", "\\u0007"):
        assert control in page  # seen, not obeyed
    assert "\u202egnp.exe" in page  # kept, inside an element that isolates its direction
    assert "😀 e\u0301" in page


def test_awa_ui_refuses_to_listen_beyond_this_machine_without_authentication() -> None:
    from io import StringIO

    err = StringIO()
    code = main(
        ["ui", "--host", "0.0.0.0", "--database-url", "postgresql://u@127.0.0.1:1/x"],
        stderr=err,
        stdout=StringIO(),
    )
    assert code == 2
    assert err.getvalue() == (
        "awa: refused: refusing to listen on 0.0.0.0 without authentication: set AWA_UI_TOKEN"
        " (or AWA_UI_BASIC_AUTH=user:password), or listen on 127.0.0.1\n"
    )


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    assert found is not None
    return found.group(1)


# -- the session the CSRF token belongs to, the origin of a form, signing out ----------------------


def signed_in(app: object) -> TestClient:
    client = browser_client(app)
    login = client.get("/login")
    answer = client.post("/login", data={"csrf": csrf_of(login.text), "token": TOKEN, "next": "/"})
    assert answer.status_code == 303
    return client


def test_a_csrf_pair_from_the_sign_in_page_does_not_fit_a_signed_in_session(
    store: MemoryStore,
) -> None:
    """The sign-in page is open to anyone: an attacker takes its cookie and token and plants
    the cookie in a signed-in browser (from a sibling subdomain, which may set cookies for the
    parent domain). The token was made for no session, so it does not fit the victim's."""
    app = create_app(store, token=TOKEN)
    attacker = browser_client(app)
    their_token = csrf_of(attacker.get("/login").text)
    victim = signed_in(app)
    victim.cookies.set("awa_csrf", attacker.cookies["awa_csrf"])
    answer = victim.post(PAUSE, data={"csrf": their_token})
    assert answer.status_code == 403
    assert "the form has expired" in answer.text
    assert not paused(store)
    assert act(victim, PAUSE).status_code == 200  # the victim's own form still works
    assert paused(store)


def test_a_post_from_another_origin_is_refused(store: MemoryStore) -> None:
    client = browser_client(create_app(store))
    token = csrf(client)
    for headers in (
        {"origin": "http://evil.example"},
        {"origin": "http://127.0.0.1:9999"},
        {"origin": "https://127.0.0.1:8000.evil.example"},
        {"origin": "null"},
        {"origin": "http://[::1"},
        {"referer": "http://evil.example/jobs"},
        {"referer": "http://127.0.0.1:8000@evil.example/"},
    ):
        answer = client.post(PAUSE, data=token, headers=headers)
        assert answer.status_code == 403, headers
        assert "came from another site" in answer.text, headers
    assert not paused(store)
    own = client.post(PAUSE, data=token, headers={"origin": "http://127.0.0.1:8000"})
    assert own.status_code == 200
    assert paused(store)


@pytest.mark.parametrize(
    ("source", "host", "same"),
    [
        ("https://dash.example", "dash.example", True),
        ("https://dash.example", "dash.example:443", True),
        ("https://dash.example", "dash.example:8443", False),
        ("http://DASH.example.:8000", "dash.example:8000", True),
        ("http://[::1]:8000", "[::1]:8000", True),
        ("http://[::1]:8000/jobs?state=failed", "[::1]:8000", True),
        ("http://dash.example", "other.dash.example", False),
        ("ftp://dash.example", "dash.example", False),
        ("http://dash.example", "", False),
        ("http://dash.example:99999", "dash.example:99999", False),
    ],
)
def test_an_origin_is_this_site_when_it_names_the_host_and_port_requested(
    source: str, host: str, same: bool
) -> None:
    assert from_this_site(source, host) is same


def test_signing_out_ends_the_session_wherever_its_cookie_is(store: MemoryStore) -> None:
    app = create_app(store, token=TOKEN)
    client = signed_in(app)
    session = client.cookies["awa_session"]
    copied = browser_client(app)
    copied.cookies.set("awa_session", session)
    assert copied.get("/").status_code == 200
    assert client.post("/logout", data=csrf(client)).status_code == 303
    assert copied.get("/").status_code == 303  # sent to sign in: the session is over
    assert copied.post(PAUSE, data=csrf_fields_of(copied)).status_code == 401
    assert not paused(store)


def csrf_fields_of(client: TestClient) -> dict[str, str]:
    """A CSRF field for ``client``'s cookies, from the sign-in page (open to anyone)."""
    return {"csrf": csrf_of(client.get("/login").text)}


# -- without a token, no proxy --------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [
        ("Forwarded", "for=192.0.2.7;proto=https"),
        ("Via", "1.1 proxy.example"),
        ("X-Forwarded-For", "127.0.0.1"),
        ("X-Forwarded-Host", "dash.example"),
        ("X-Real-IP", "127.0.0.1"),
        ("True-Client-IP", "127.0.0.1"),
    ],
)
def test_without_a_token_a_request_through_a_proxy_is_refused(
    store: MemoryStore, header: tuple[str, str]
) -> None:
    """A proxy on this machine connects from 127.0.0.1 on behalf of anyone it serves."""
    client = browser_client(create_app(store))
    token = csrf(client)  # a form fetched directly, then posted through the proxy
    name, value = header
    for answer in (
        client.get("/", headers={name: value}),
        client.post(PAUSE, data=token, headers={name: value}),
    ):
        assert answer.status_code == 403
        assert f"came through a proxy (it has a {name.lower()} header)" in answer.text
        assert "give it a token" in answer.text
        assert (
            answer.headers["content-security-policy"] == SECURITY_HEADERS["content-security-policy"]
        )
    assert not paused(store)


def test_with_a_token_or_an_authenticating_app_in_front_proxies_are_served(
    store: MemoryStore,
) -> None:
    through = {"Via": "1.1 proxy.example", "X-Forwarded-For": "192.0.2.7"}
    bearer = {"authorization": f"Bearer {TOKEN}", **through}
    assert (
        browser_client(create_app(store, token=TOKEN)).get("/", headers=bearer).status_code == 200
    )
    fronted = browser_client(create_app(store, allow_unauthenticated=True))
    assert fronted.get("/", headers=through).status_code == 200


# -- numbers of any length -------------------------------------------------------------------------


def test_a_number_of_any_length_is_a_400_with_the_security_headers(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Python's int() refuses a literal of more than 4,300 digits with a ValueError: read
    unchecked, a long number was a bare 500 and a traceback per request."""
    client = browser_client(create_app(store), raise_server_exceptions=False)
    token = csrf(client)
    caplog.set_level(logging.DEBUG)
    for number in ("9" * 5000, "9" * 4301, "9" * 20, str(2**63), "0"):
        answers = (
            client.get(f"/jobs/{number}"),
            client.get(f"/jobs/{number}/cancel"),
            client.post(f"/jobs/{number}/retry", data=token),
            client.get(f"/jobs?before={number}"),
            client.get(f"/jobs?id={number}"),
            client.get(f"/jobs?limit={number}"),
            client.get(f"/dlq/retry?id={number}"),
            client.post("/dlq/retry", data={**token, "id": number}),
        )
        for answer in answers:
            assert answer.status_code == 400, (answer.url, number[:30])
            assert "must be a whole number from 1 to 9223372036854775807" in answer.text
            for name, value in SECURITY_HEADERS.items():
                assert answer.headers[name] == value, (answer.url, name)
    assert client.get("/jobs/1").status_code == 200
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
