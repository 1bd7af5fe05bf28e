"""The web dashboard: queues, jobs and the dead-letter queue, seen and steered in a browser.

``create_app(client_or_store, ...)`` (needs the ``ui`` extra: ``pip install 'awa[ui]'``) is an
ASGI app to run with uvicorn or mount in your own; ``awa ui`` runs it. See docs/ui.md.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from awa.ui.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> object:
    # Starlette and Jinja2 are optional: importing awa.ui must not need them
    if name == "create_app":
        from awa.ui.app import create_app

        return create_app
    raise AttributeError(f"module 'awa.ui' has no attribute {name!r}")
