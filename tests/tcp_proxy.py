"""A TCP proxy that can black-hole its connections, for network-failure tests.

``TcpProxy(upstream_host, upstream_port)`` listens on a free local port and forwards every
connection to the upstream server. ``black_hole()`` turns the network silent the way a
partition does, without a single reset:

* every open connection stays open, and the bytes sent on it in either direction are read and
  thrown away: the kernel keeps acknowledging them, so neither end's TCP stack (keepalives,
  ``tcp_user_timeout``) can tell anything is wrong; only a client-side timeout can;
* a new connection is accepted and swallowed the same way (``new="swallow"``), or left
  unanswered in the listen backlog (``new="ignore"``).

``heal()`` forwards new connections again. Connections that were black-holed stay dead, as
they do after a real partition (their packets were lost; neither end resynchronises).

A thread per direction and connection: a handful of connections at most, in tests.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Literal

__all__ = ["TcpProxy", "closed_port"]

_CHUNK = 65536


class _Link:
    """One proxied connection: the client's socket and the upstream one (absent when the
    connection was swallowed from the start)."""

    def __init__(self, client: socket.socket, upstream: socket.socket | None) -> None:
        self.client = client
        self.upstream = upstream
        self.dead = upstream is None

    def close(self) -> None:
        for sock in (self.client, self.upstream):
            if sock is not None:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


class TcpProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self._silent = False
        self._new: Literal["swallow", "ignore"] = "swallow"
        self._accepting = threading.Event()
        self._accepting.set()
        self._closed = False
        self.accepted = 0  # connections accepted so far (forwarded or swallowed)
        threading.Thread(target=self._accept_loop, name="proxy-accept", daemon=True).start()

    # -- control ----------------------------------------------------------------------------
    def black_hole(self, *, new: Literal["swallow", "ignore"] = "swallow") -> None:
        """From now on nothing gets through, and nothing is reset."""
        with self._lock:
            self._silent, self._new = True, new
            for link in self._links:
                link.dead = True
            if new == "ignore":
                self._accepting.clear()

    def heal(self) -> None:
        """New connections are forwarded again; the black-holed ones stay dead."""
        with self._lock:
            self._silent = False
            self._accepting.set()

    @property
    def open_links(self) -> int:
        with self._lock:
            return len(self._links)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            links, self._links = self._links, []
        self._accepting.set()
        with suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for link in links:
            link.close()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, database_url: str) -> str:
        """``database_url`` with its host and port replaced by this proxy's."""
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(database_url)
        params.update(host="127.0.0.1", port=str(self.port))
        params.pop("hostaddr", None)
        return make_conninfo(**params)

    # -- forwarding ---------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while True:
            self._accepting.wait()
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self._closed:
                    client.close()
                    return
                swallow = self._silent
            upstream = None
            if not swallow:
                try:
                    upstream = socket.create_connection(self.upstream, timeout=5)
                    upstream.settimeout(None)
                except OSError:
                    client.close()
                    continue
            link = _Link(client, upstream)
            with self._lock:
                self._links.append(link)
                self.accepted += 1
            self._pump(link, link.client, link.upstream)
            if upstream is not None:
                self._pump(link, upstream, link.client)

    def _pump(self, link: _Link, source: socket.socket, sink: socket.socket | None) -> None:
        def run() -> None:
            while True:
                try:
                    data = source.recv(_CHUNK)
                except OSError:
                    data = b""
                if not data:  # one side closed: close both, unless the link is black-holed
                    if not link.dead:
                        self._drop(link)
                    return
                if link.dead or sink is None:
                    continue  # read and thrown away: the sender's kernel sees it acknowledged
                try:
                    sink.sendall(data)
                except OSError:
                    self._drop(link)
                    return

        threading.Thread(target=run, name="proxy-pump", daemon=True).start()

    def _drop(self, link: _Link) -> None:
        with self._lock:
            if link in self._links:
                self._links.remove(link)
        link.close()


@contextmanager
def closed_port() -> Iterator[int]:
    """A local TCP port nothing listens on (connecting is refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    yield port
