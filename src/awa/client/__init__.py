"""``awa.AsyncClient`` and ``awa.Client``: the surface applications write against.

Both are thin. A request is made once (``requests.py``), every store call is written once
(``store_access.py``), the producer verbs' keywords once (``producing.py``), and every shared
verb once, as the async client's (``async_verbs.py``), from which ``tools/async_to_sync.py``
generates the sync client's (``sync_verbs.py``): the async client runs a call off the event
loop, the sync client calls it. A verb that only hands its arguments on takes its signature
from what it calls (``calls.py``: ``forward_async``, ``produces_async`` and their sync twins),
so keywords and defaults are not written again for each client. The store comes from a
URL (``awa.adapters.open_store``) or is given; what it can do beyond the port (migrate, close,
listen, insert on the caller's connection or from the loop) is asked of it through the
capability protocols of ``awa.ports``, never by importing an adapter.
"""

from awa.client.async_client import AsyncClient
from awa.client.requests import InsertSpec
from awa.client.sync_client import Client

__all__ = ["AsyncClient", "Client", "InsertSpec"]
