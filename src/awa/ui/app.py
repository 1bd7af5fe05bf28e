"""The dashboard as an ASGI app (Starlette): ``create_app(client_or_store, ...)``.

Pages (``GET``): ``/`` the queues, ``/jobs`` (filters in the query string: ``state``,
``queue``, ``kind``, ``tag``, ``limit``, ``before``), ``/jobs/{id}``, ``/dlq`` (``queue``,
``kind``), ``/periodic`` the schedules. Actions: ``POST`` to ``/jobs/{id}/cancel|retry``,
``/queues/{name}/pause|resume``, ``/queues/{name}/limits``, ``/dlq/retry``, ``/dlq/purge``,
``/queues/count`` and ``/periodic/{name}/pause|resume|trigger|remove``, each behind a
confirmation page (the limits: their form) at the same path (``GET``); see ``awa.ui.actions``,
``awa.ui.limits`` and ``awa.ui.periodic``. With a token: ``/login`` and
``/logout``.

Every response carries a Content-Security-Policy without inline scripts or styles (the one
script, live refresh, is a file under ``/static``), and refuses to be framed; a failure of the
dashboard's own (a bug) too. The numbers a request carries are read by ``awa.ui.numbers``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from awa.domain import ValidationError
from awa.ports import ClaimStore
from awa.ui.access import SESSION_COOKIE, SESSION_MAX_AGE_S, Access, proxy_header
from awa.ui.actions import Actions
from awa.ui.csrf import Csrf
from awa.ui.limits import QueueLimits
from awa.ui.pages import Pages
from awa.ui.periodic import Schedules
from awa.ui.web import Web

__all__ = ["SECURITY_HEADERS", "create_app"]

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
        " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}
_OPEN_PATHS = ("/login", "/static/")  # reachable before signing in with a token


def _store_of(target: Any) -> ClaimStore:
    """An ``awa.Client``/``awa.AsyncClient`` gives its store; anything else is the store."""
    from awa.client import AsyncClient, Client

    if isinstance(target, (Client, AsyncClient)):
        store: ClaimStore = target.store
        return store
    for verb in ("get_job", "list_job_summaries", "queue_stats", "cancel"):
        if not callable(getattr(target, verb, None)):
            raise ValidationError(f"create_app needs a client or a store, got {target!r}")
    return target  # type: ignore[no-any-return]


class _Guard:
    """Lets a request through only when ``access`` allows it, and puts the security headers on
    every response. A refused browser is sent to sign in (token), asked for credentials (basic
    auth) or told the dashboard serves this machine only."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.setdefault("headers", [])
                names = {name.lower() for name, _ in headers}
                for name, value in SECURITY_HEADERS.items():
                    if name.encode() not in names:
                        headers.append((name.encode(), value.encode()))
                if b"cache-control" not in names:
                    headers.append((b"cache-control", b"no-store"))
            await send(message)

        request = Request(scope)
        verdict = self.access.check(
            client_host=scope["client"][0] if scope.get("client") else None,
            host_header=request.headers.get("host", ""),
            authorization=request.headers.get("authorization"),
            session=request.cookies.get(SESSION_COOKIE),
            proxied_by=proxy_header(request.headers.keys()),
        )
        path = _inner_path(scope)
        if verdict.allowed or (self.access.token and path.startswith(_OPEN_PATHS)):
            scope.setdefault("state", {})["awa_bearer"] = verdict.bearer
            await self.app(scope, receive, send_secured)
            return
        await self._refuse(request, path, verdict.reason)(scope, receive, send_secured)

    def _refuse(self, request: Request, path: str, reason: str) -> Response:
        if not self.access.required:
            return PlainTextResponse(f"403 forbidden: {reason}", status_code=403)
        if self.access.basic is not None:
            return PlainTextResponse(
                f"401 unauthorized: {reason}",
                status_code=401,
                headers={"www-authenticate": 'Basic realm="awa dashboard", charset="UTF-8"'},
            )
        if request.method in ("GET", "HEAD"):
            root = request.scope.get("root_path", "").rstrip("/")
            target = path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"{root}/login?{_next(target)}", status_code=303)
        return PlainTextResponse(f"401 unauthorized: {reason}", status_code=401)


async def _internal_error(request: Request, exc: Exception) -> Response:
    """A bug's answer, with the security headers all the same: Starlette answers an exception
    from outside ``_Guard``. The traceback goes to the server's log, not to the browser."""
    return PlainTextResponse(
        "500 internal server error: the dashboard failed; the server's log says why",
        status_code=500,
        headers={**SECURITY_HEADERS, "cache-control": "no-store"},
    )


def _inner_path(scope: Scope) -> str:
    """The request's path below wherever the app is mounted."""
    path: str = scope.get("path", "/")
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _next(target: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"next": target})


def _safe_next(text: str | None) -> str:
    """Where to go after signing in: a path of this app, never another site."""
    if not text or not text.startswith("/") or text.startswith("//") or "\\" in text:
        return "/"
    return text


class _SignIn:
    """``/login`` and ``/logout`` for a token: signing in opens a session
    (``awa.ui.sessions``) and puts its id in a cookie, signing out ends it."""

    def __init__(self, web: Web, access: Access) -> None:
        self.web = web
        self.access = access

    async def login(self, request: Request) -> Response:
        goto = _safe_next(request.query_params.get("next"))
        if request.method == "GET":
            return self.web.render(request, "login.html", next=goto, failed=False)
        fields = await self.web.posted(request)
        if isinstance(fields, Response):
            return fields
        goto = _safe_next(fields.get("next"))
        if not self.access.token_matches(fields.get("token", "")):
            return self.web.render(request, "login.html", status=401, next=goto, failed=True)
        root = request.scope.get("root_path", "").rstrip("/")
        response = RedirectResponse(root + goto, status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            self.access.new_session(),
            max_age=SESSION_MAX_AGE_S,
            path=self.web.cookie_path(request),
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
        return response

    async def logout(self, request: Request) -> Response:
        fields = await self.web.posted(request)
        if isinstance(fields, Response):
            return fields
        session = request.cookies.get(SESSION_COOKIE)
        if session is not None:
            self.access.end_session(session)  # the cookie, wherever it is kept, opens nothing
        response = RedirectResponse(self.web.path(request, "login"), status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=self.web.cookie_path(request))
        return response


def create_app(
    client_or_store: Any,
    *,
    read_only: bool = False,
    token: str | None = None,
    basic_auth: tuple[str, str] | None = None,
    allow_unauthenticated: bool = False,
    live_refresh_s: float = 5.0,
    stale_after_s: float = 60.0,
    now: Callable[[], float] = time.time,
) -> Starlette:
    """The dashboard for ``client_or_store`` (an ``awa.Client``, ``awa.AsyncClient`` or a
    store), to run with uvicorn or mount in your Starlette/FastAPI app
    (``app.mount("/awa", create_app(client, token=...))``).

    ``token`` (at least 16 characters) or ``basic_auth`` (user, password) make every request
    authenticate. With neither, the dashboard serves loopback clients asking for a loopback
    host only, unless ``allow_unauthenticated`` (your app authenticates in front of it).
    ``read_only`` removes every action. ``live_refresh_s``: how often open pages refresh
    themselves (0: never); ``stale_after_s``: when the queue counts are old enough to say so.
    """
    store = _store_of(client_or_store)
    access = Access(
        token=token, basic=basic_auth, allow_unauthenticated=allow_unauthenticated, now=now
    )
    for name, value in (("live_refresh_s", live_refresh_s), ("stale_after_s", stale_after_s)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 86400:
            raise ValidationError(f"{name} must be from 0 to 86400 seconds, got {value!r}")
    web = Web(
        store,
        read_only=read_only,
        csrf=Csrf(),
        signs_in=token is not None,
        live_refresh_s=float(live_refresh_s),
        stale_after_s=float(stale_after_s),
    )
    pages, actions = Pages(web), Actions(web)
    schedules = Schedules(web, actions)
    limits = QueueLimits(web, actions, pages)
    both = ["GET", "POST"]
    routes = [
        Route("/", pages.queues, name="queues"),
        Route("/queues/count", actions.count_queues, methods=["POST"], name="count_queues"),
        Route("/queues/{queue}/pause", actions.pause_queue, methods=both, name="pause_queue"),
        Route("/queues/{queue}/resume", actions.resume_queue, methods=both, name="resume_queue"),
        Route("/queues/{queue}/limits", limits.edit, methods=both, name="queue_limits"),
        Route("/jobs", pages.jobs, name="jobs"),
        Route("/jobs/{job_id}", pages.job, name="job"),
        Route("/jobs/{job_id}/cancel", actions.cancel_job, methods=both, name="cancel_job"),
        Route("/jobs/{job_id}/retry", actions.retry_job, methods=both, name="retry_job"),
        Route("/dlq", pages.dlq, name="dlq"),
        Route("/dlq/retry", actions.dlq_retry, methods=both, name="dlq_retry"),
        Route("/dlq/purge", actions.dlq_purge, methods=both, name="dlq_purge"),
        Route("/periodic", schedules.page, name="periodic"),
        *(
            Route(f"/periodic/{{schedule}}/{verb}", action, methods=both, name=f"{verb}_schedule")
            for verb, action in (
                ("pause", schedules.pause),
                ("resume", schedules.resume),
                ("trigger", schedules.trigger),
                ("remove", schedules.remove),
            )
        ),
        Mount("/static", StaticFiles(packages=[("awa.ui", "static")]), name="static"),
    ]
    if token is not None:
        sign_in = _SignIn(web, access)
        routes += [
            Route("/login", sign_in.login, methods=both, name="login"),
            Route("/logout", sign_in.logout, methods=["POST"], name="logout"),
        ]
    app = Starlette(routes=routes, exception_handlers={Exception: _internal_error})
    app.add_middleware(_Guard, access=access)
    return app
