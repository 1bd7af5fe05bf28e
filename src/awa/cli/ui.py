"""``awa ui``: the web dashboard (``awa.ui``), served by uvicorn.

Without ``AWA_UI_TOKEN`` or ``AWA_UI_BASIC_AUTH`` it listens on a loopback address only, and
serves only this machine; ``--host`` anything else needs one of them.

``--log-level`` is uvicorn's and awa's: uvicorn configures its own loggers only, so the
dashboard's (``awa.ui``: one INFO line per action done, an ERROR when the store fails) get a
handler of their own on stderr here, in uvicorn's format with the logger's name."""

from __future__ import annotations

import argparse
import copy
from typing import Any

from awa.cli.arguments import Commands, command, positive
from awa.cli.connect import open_store
from awa.cli.session import Refused, Session
from awa.domain import ValidationError

__all__ = ["add_parser", "log_config", "ui"]


def add_parser(commands: Commands) -> None:
    p = command(
        commands,
        "ui",
        "serve the web dashboard: queues, jobs and the dead-letter queue in a browser",
        ui,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    p.add_argument("--read-only", action="store_true", help="show everything, change nothing")
    p.add_argument("--pool-size", type=positive, default=4, help="database connections")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging configuration, with awa's loggers written to stderr at ``level``."""
    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["awa"] = {
        "()": "uvicorn.logging.DefaultFormatter",
        "fmt": "%(levelprefix)s %(name)s: %(message)s",
        "use_colors": None,
    }
    config["handlers"]["awa"] = {
        "formatter": "awa",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    config["loggers"]["awa"] = {"handlers": ["awa"], "level": level.upper(), "propagate": False}
    return config


def ui(args: argparse.Namespace, session: Session) -> None:
    try:
        import uvicorn

        from awa.ui import create_app
        from awa.ui.access import BASIC_AUTH_ENV, TOKEN_ENV, Access, is_loopback_host
    except ImportError as exc:
        raise Refused(f"the dashboard needs the ui extra (pip install 'awa[ui]'): {exc}") from None
    access = Access.from_environ(session.environ)
    if not access.required and not is_loopback_host(args.host):
        raise Refused(
            f"refusing to listen on {args.host} without authentication: set {TOKEN_ENV} (or"
            f" {BASIC_AUTH_ENV}=user:password), or listen on 127.0.0.1"
        )
    if not 0 < args.port < 65536:
        raise ValidationError(f"--port must be from 1 to 65535, got {args.port}")
    url = session.database_url(args)
    # check_now: an unreachable database is named before the dashboard starts listening
    with open_store(url, pool_size=args.pool_size, check_now=True) as store:
        app = create_app(
            store, read_only=args.read_only, token=access.token, basic_auth=access.basic
        )
        how = "token" if access.token else "basic auth" if access.basic else "this machine only"
        mode = ", read-only" if args.read_only else ""
        host = f"[{args.host}]" if ":" in args.host else args.host
        session.stderr.write(f"awa ui: http://{host}:{args.port}/ ({how}{mode})\n")
        session.stderr.flush()
        uvicorn.run(
            app,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            log_config=log_config(args.log_level),
        )
