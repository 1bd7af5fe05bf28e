"""Who may see and steer: this machine only without a token; a token or basic-auth credentials
otherwise; a CSRF token on every state-changing request; user data never read as markup; the
security headers on every answer."""

from __future__ import annotations

import base64
import re

import pytest

from awa.adapters.memory import ManualClock, MemoryStore
from awa.cli import main
from awa.domain import Fail, JobState, NewJob, Schedule, ValidationError
from awa.ports import Finish
from awa.ui import create_app
from awa.ui.access import SESSION_MAX_AGE_S
from awa.ui.app import SECURITY_HEADERS
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
    login = client.get("/login")
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example", "jobs"):
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
