"""``awa callback complete|fail|resume|retry``: answer a job's pending callback by hand; and
``awa callbacks serve``: the signed HTTP receiver that answers them for an external system."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

from awa.cli import output as out
from awa.cli.arguments import Commands, command, group, positive
from awa.cli.connect import open_store
from awa.cli.session import Refused, Session
from awa.client import Client
from awa.domain import Job, ValidationError
from awa.domain.defaults import FAILED_BY_CALLBACK
from awa.domain.validation import JSON_DEPTH_MAX, check_json

__all__ = [
    "add_parser",
    "callback_complete",
    "callback_fail",
    "callback_resume",
    "callback_retry",
    "callbacks_serve",
]


def add_parser(commands: Commands) -> None:
    callback = group(commands, "callback", "answer a job's pending callback from the command line")
    p = command(callback, "complete", "complete the waiting job", callback_complete)
    p.add_argument("callback_id")
    p.add_argument("--payload", metavar="JSON", help="result stored on the job")
    p = command(callback, "fail", "fail the waiting job", callback_fail)
    p.add_argument("callback_id")
    p.add_argument("--error", default=FAILED_BY_CALLBACK, help="error message recorded")
    p = command(callback, "resume", "hand a payload to the still-waiting handler", callback_resume)
    p.add_argument("callback_id")
    p.add_argument("--payload", metavar="JSON", help="what the handler receives")
    p = command(
        callback, "retry", "start the job again from scratch (attempt reset)", callback_retry
    )
    p.add_argument("callback_id")

    callbacks = group(commands, "callbacks", "the HTTP callback receiver")
    p = command(
        callbacks, "serve", "serve signed callback requests over HTTP (uvicorn)", callbacks_serve
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument(
        "--secret-env",
        default="AWA_CALLBACK_SECRET",
        metavar="VAR",
        help="environment variable holding the HMAC secret (default: AWA_CALLBACK_SECRET)",
    )
    p.add_argument(
        "--allow-unsigned", action="store_true", help="accept unsigned requests (trusted networks)"
    )
    p.add_argument("--pool-size", type=positive, default=10, help="database connections")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def _payload(args: argparse.Namespace) -> Any:
    text = getattr(args, "payload", None)
    if text is None:
        return None
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Refused(f"--payload is not valid JSON: {exc}") from None
    except RecursionError:  # before Python 3.13, past about a thousand levels
        raise Refused(f"--payload is nested deeper than {JSON_DEPTH_MAX} levels") from None
    except ValueError:  # int() refuses a literal of more than sys.get_int_max_str_digits()
        raise Refused("--payload holds a number too long to read") from None
    try:  # what the store would refuse (NaN, too deep) is refused here the same way
        return check_json("--payload", payload)
    except ValidationError as exc:
        raise Refused(str(exc)) from None


def _answer(
    args: argparse.Namespace, session: Session, verb: str, act: Callable[[Client], Job]
) -> None:
    """Answer the callback with ``act`` and say what that did to its job."""
    with session.client(args) as client:
        job = act(client)
    about = {"callback_id": args.callback_id}
    verb = f"callback {args.callback_id} {verb}"
    out.print_job_result(verb, job, session.stdout, as_json=args.json, about=about)


def callback_complete(args: argparse.Namespace, session: Session) -> None:
    payload = _payload(args)  # refused before the database is asked
    _answer(args, session, "completed", lambda c: c.complete_external(args.callback_id, payload))


def callback_fail(args: argparse.Namespace, session: Session) -> None:
    _answer(args, session, "failed", lambda c: c.fail_external(args.callback_id, args.error))


def callback_resume(args: argparse.Namespace, session: Session) -> None:
    payload = _payload(args)
    _answer(args, session, "resumed", lambda c: c.resume_external(args.callback_id, payload))


def callback_retry(args: argparse.Namespace, session: Session) -> None:
    _answer(args, session, "retried from scratch", lambda c: c.retry_external(args.callback_id))


def callbacks_serve(args: argparse.Namespace, session: Session) -> None:
    secret_text = session.environ.get(args.secret_env) or os.environ.get(args.secret_env)
    if not secret_text and not args.allow_unsigned:
        raise Refused(
            f"no callback secret: set {args.secret_env} (or choose another variable with"
            " --secret-env), or pass --allow-unsigned on a trusted network"
        )
    try:
        import uvicorn

        from awa.http import create_app
    except ImportError as exc:
        raise Refused(
            f"the HTTP receiver needs the http extra (pip install 'awa[http]'): {exc}"
        ) from None
    url = session.database_url(args)
    # check_now: the receiver makes no store call until a request comes; an unreachable
    # server is named now, before the server starts listening
    with open_store(url, pool_size=args.pool_size, check_now=True) as store:
        app = create_app(
            store,
            secret=secret_text.encode() if secret_text else None,
            allow_unsigned=args.allow_unsigned,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
