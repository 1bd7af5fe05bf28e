"""What every page and action of the dashboard shares: the store and how to call it, the
templates, paths under wherever the app is mounted, forms and their CSRF check, error pages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, Response

from awa.domain import (
    AwaError,
    DatabaseError,
    IllegalTransition,
    JobNotFound,
    JobState,
    ScheduleNotFound,
    SchemaNotMigrated,
    ValidationError,
)
from awa.operations.refusals import JobNotInDlq, NotCancellable
from awa.operations.wording import human_duration
from awa.ports import ClaimStore
from awa.ui import views
from awa.ui.access import SESSION_COOKIE
from awa.ui.csrf import CSRF_COOKIE, CSRF_FIELD, Csrf, CsrfRefused

__all__ = ["FORM_BYTES_MAX", "Web"]

log = logging.getLogger("awa.ui")

T = TypeVar("T")

#: the largest form body an action reads (its forms hold a few short fields)
FORM_BYTES_MAX = 16 * 1024
_FORM_FIELDS_MAX = 16

#: an error of the store's and the page status it becomes
_STATUS = (
    (JobNotFound, 404),
    (ScheduleNotFound, 404),
    (IllegalTransition, 409),
    (JobNotInDlq, 409),
    (NotCancellable, 409),
    (ValidationError, 400),
    (DatabaseError, 503),
    (SchemaNotMigrated, 503),
)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("awa.ui", "templates"),
        autoescape=True,  # every value is escaped unless a template says otherwise (none does)
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        shown=views.shown,
        json_text=views.json_text,
        headline=views.headline,
        when=views.when,
        duration=human_duration,
        unreadable=views.unreadable,
    )
    env.globals.update(JobState=JobState, states=list(JobState))
    return env


class Web:
    """Shared by the pages and the actions of one dashboard app."""

    def __init__(
        self,
        store: ClaimStore,
        *,
        read_only: bool,
        csrf: Csrf,
        signs_in: bool,
        live_refresh_s: float,
        stale_after_s: float,
    ) -> None:
        self.store = store
        self.read_only = read_only
        self.csrf = csrf
        self.signs_in = signs_in
        self.live_refresh_s = live_refresh_s
        self.stale_after_s = stale_after_s
        self._env = _environment()

    # -- the store ----------------------------------------------------------------------------
    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A store verb, off the event loop (store verbs are synchronous)."""
        return await run_in_threadpool(fn, *args, **kwargs)

    def now(self) -> datetime:
        """The store's time when this process can read it (a manual clock), else ours."""
        clock = self.store.clock
        return clock.now() if clock is not None else datetime.now(timezone.utc)

    # -- paths ------------------------------------------------------------------------------
    @staticmethod
    def path(
        request: Request, name: str, query: Mapping[str, Any] | None = None, **params: Any
    ) -> str:
        """The path of route ``name`` under wherever the app is mounted, with a query string
        of the ``query`` values that are set."""
        root: str = request.scope.get("root_path", "").rstrip("/")
        path = root + str(request.app.url_path_for(name, **params))
        kept = {k: v for k, v in (query or {}).items() if v not in (None, "", False)}
        return f"{path}?{urlencode(kept)}" if kept else path

    @staticmethod
    def cookie_path(request: Request) -> str:
        root: str = request.scope.get("root_path", "")
        return root.rstrip("/") + "/"

    # -- pages ------------------------------------------------------------------------------
    def render(
        self,
        request: Request,
        template: str,
        *,
        status: int = 200,
        live: bool = False,
        **context: Any,
    ) -> HTMLResponse:
        """``template`` with ``context``, the CSRF token of this browser (a cookie set here
        when it has none) and what the layout needs."""
        cookie = request.cookies.get(CSRF_COOKIE)
        fresh = not cookie
        if not cookie:
            cookie = self.csrf.new_cookie()

        def path(name: str, query: Mapping[str, Any] | None = None, **params: Any) -> str:
            return self.path(request, name, query, **params)

        html = self._env.get_template(template).render(
            request=request,
            path=path,
            csrf_field=CSRF_FIELD,
            csrf_token=self.csrf.form_token(cookie, request.cookies.get(SESSION_COOKIE)),
            read_only=self.read_only,
            signs_in=self.signs_in,
            live_refresh_s=self.live_refresh_s if live else 0,
            now=self.now(),
            age=views.age,
            **context,
        )
        response = HTMLResponse(html, status_code=status)
        if fresh:
            response.set_cookie(
                CSRF_COOKIE,
                cookie,
                path=self.cookie_path(request),
                httponly=True,
                samesite="lax",
                secure=request.url.scheme == "https",
            )
        return response

    def refusal(self, request: Request, status: int, message: str) -> HTMLResponse:
        """A page that says, in one line, why nothing was done."""
        return self.render(request, "refused.html", status=status, message=message)

    def failure(self, request: Request, exc: AwaError) -> HTMLResponse:
        """The page for an error of the store's: its one line, and the status it means."""
        status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 400)
        if status == 503:
            log.error("dashboard: %s", exc)
            return self.refusal(request, 503, "the job store is unavailable; try again later")
        return self.refusal(request, status, views.shown(str(exc)) or type(exc).__name__)

    def read_only_refusal(self, request: Request) -> HTMLResponse:
        return self.refusal(request, 403, "this dashboard is read-only: nothing was changed")

    # -- forms --------------------------------------------------------------------------------
    async def form(self, request: Request) -> dict[str, str]:
        """The fields of a posted form, once its CSRF token checks out (``CsrfRefused``
        otherwise). Bounded: a larger body or more fields is a ``ValidationError``."""
        body = b""
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > FORM_BYTES_MAX:
                    raise ValidationError(f"form larger than {FORM_BYTES_MAX} bytes")
        except ClientDisconnect:
            raise ValidationError("the browser went away before the form arrived") from None
        try:
            pairs = parse_qsl(
                body.decode("utf-8"),
                keep_blank_values=True,
                strict_parsing=False,
                max_num_fields=_FORM_FIELDS_MAX,
            )
        except (UnicodeDecodeError, ValueError):
            raise ValidationError("the form is not a form this dashboard sent") from None
        fields = dict(pairs)
        if not getattr(request.state, "awa_bearer", False):
            self.csrf.check(
                cookie=request.cookies.get(CSRF_COOKIE),
                session=request.cookies.get(SESSION_COOKIE),
                token=fields.get(CSRF_FIELD),
                headers=request.headers,
            )
        return fields

    async def posted(self, request: Request) -> dict[str, str] | Response:
        """``form``, or the page refusing it."""
        try:
            return await self.form(request)
        except CsrfRefused as exc:
            return self.refusal(request, 403, str(exc))
        except ValidationError as exc:
            return self.refusal(request, 400, str(exc))
