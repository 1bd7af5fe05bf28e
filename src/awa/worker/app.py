"""The application a worker runs: ``module:attribute`` naming an ``awa.AsyncClient`` or
``awa.Client``, or a function taking no arguments that returns one (as ``uvicorn`` and
``procrastinate`` take theirs).

The module is imported with the current directory first on ``sys.path``, so ``awa worker
app:client`` finds ``./app.py``. A module that cannot be found, an attribute that is not
there, or something that is not a client is one line (``WorkerError``); an exception raised
while the application's own module imports is its bug, and keeps its traceback.
"""

from __future__ import annotations

import importlib
import os
import sys

from awa.client import AsyncClient, Client
from awa.worker.errors import WorkerError

__all__ = ["load_app"]


def load_app(spec: str) -> AsyncClient:
    """The client ``spec`` (``module:attribute``) names; a ``Client`` gives the
    ``AsyncClient`` underneath it, sharing its store and tasks."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise WorkerError(
            f"APP is module:attribute, naming an awa client (for example myapp.jobs:client),"
            f" got {spec!r}"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise  # a module the application imports is missing: its traceback says where
        raise WorkerError(f"cannot import {module_name!r}: {exc}") from None
    found: object = module
    for name in attribute.split("."):
        if not hasattr(found, name):
            raise WorkerError(f"module {module_name!r} has no attribute {attribute!r}")
        found = getattr(found, name)
    client = _client(found)
    if client is None and callable(found):
        client = _client(found())
    if client is None:
        raise WorkerError(
            f"{spec} is {type(found).__name__}, not an awa AsyncClient or Client, nor a"
            " function returning one"
        )
    return client


def _client(value: object) -> AsyncClient | None:
    if isinstance(value, AsyncClient):
        return value
    if isinstance(value, Client):
        return value.async_client
    return None
