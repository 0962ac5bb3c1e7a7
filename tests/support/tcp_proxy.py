"""A small TCP proxy that tests can move to another server at runtime: a stand-in for a VIP,
a DNS name or ProxySQL in front of a database during a switch-over.

`TcpProxy(host, port)` listens on a free 127.0.0.1 port (once `start()`ed, or entered as a
context manager) and forwards each connection it accepts to the current target. `redirect(host,
port)` makes the new server the target and closes every connection open through the proxy, as a
VIP move does: the clients see their connections drop, and their reconnects reach the new server.

Test support only: nothing starts at import, and the proxy forwards bytes, nothing more (no
protocol awareness, no TLS termination, no delays). One thread accepts and two threads pump each
connection; all are daemon threads and `close()` ends them.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

_CHUNK = 64 * 1024


class _Link:
    """One client connection and its upstream connection to the target it was opened to."""

    def __init__(self, client: socket.socket, upstream: socket.socket, target: tuple[str, int]) -> None:
        self.client = client
        self.upstream = upstream
        self.target = target
        self._closed = threading.Event()

    def close(self) -> None:
        """Both sockets, shut down first so that the pump threads blocked in recv() wake up."""
        if self._closed.is_set():
            return
        self._closed.set()
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


class TcpProxy:
    """Forwards 127.0.0.1:`port` to a target (host, port) that `redirect` can change.

    `accepted` counts the connections accepted, `dropped` those closed by `redirect` or
    `drop_connections` (both only grow): a test can tell that its client did reconnect.
    """

    def __init__(self, host: str, port: int, *, listen_host: str = "127.0.0.1", connect_timeout: float = 5.0) -> None:
        self.listen_host = listen_host
        self._target = (host, int(port))
        self._connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._links: set[_Link] = set()
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self.port = 0
        self.accepted = 0
        self.dropped = 0

    # -- life cycle -------------------------------------------------------------------------------
    def start(self) -> TcpProxy:
        if self._listener is not None:
            raise RuntimeError("the proxy is already started")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.listen_host, 0))
        listener.listen(64)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, name=f"tcp-proxy-{self.port}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop accepting and close every open connection."""
        self._closing.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                self._listener.close()
        self.drop_connections()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.close()

    # -- what tests call --------------------------------------------------------------------------
    @property
    def target(self) -> tuple[str, int]:
        with self._lock:
            return self._target

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._links)

    def redirect(self, host: str, port: int) -> int:
        """Send new connections to (host, port) and close every current one (a VIP move).
        Returns how many were closed. A connection being opened while this runs is opened to the
        new target or closed: none to the old target survives the call."""
        with self._lock:
            self._target = (host, int(port))
            links, self._links = self._links, set()
            self.dropped += len(links)
        for link in links:
            link.close()
        return len(links)

    def drop_connections(self) -> int:
        """Close every current connection without changing the target (a network blip)."""
        host, port = self.target
        return self.redirect(host, port)

    # -- the threads ------------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            self._open(client)

    def _open(self, client: socket.socket) -> None:
        # The target is read, connected to and registered under the lock, so that a redirect
        # either sees this link (and closes it) or comes after it and was already applied to it.
        with self._lock:
            self.accepted += 1
            target = self._target
            try:
                upstream = socket.create_connection(target, timeout=self._connect_timeout)
            except OSError:
                upstream = None
            else:
                upstream.settimeout(None)
                link = _Link(client, upstream, target)
                self._links.add(link)
        if upstream is None:  # the target is down: the client sees its connection close at once
            with contextlib.suppress(OSError):
                client.close()
            return
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for src, dst in ((client, upstream), (upstream, client)):
            threading.Thread(
                target=self._pump, args=(link, src, dst), name=f"tcp-proxy-{self.port}-pump", daemon=True
            ).start()

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(_CHUNK)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._links.discard(link)
        link.close()
