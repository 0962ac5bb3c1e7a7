"""The test proxy (tcp_proxy.py) against two in-process servers that say who they are."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration  # listening sockets


@contextmanager
def _named_echo(name: bytes) -> Iterator[int]:
    """A server on a free port that greets each connection with `name` and a newline, then echoes."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.sendall(name + b"\n")
            while data := conn.recv(4096):
                conn.sendall(data)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        listener.close()
        thread.join(5)


def _connect(port: int) -> tuple[socket.socket, bytes]:
    """A connection through the proxy and the name of the server it reached."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    greeting = b""
    while not greeting.endswith(b"\n"):
        chunk = sock.recv(64)
        if not chunk:
            break
        greeting += chunk
    return sock, greeting.strip()


def test_forwards_and_a_redirect_drops_connections_and_sends_new_ones_to_the_new_target() -> None:
    with _named_echo(b"a") as a, _named_echo(b"b") as b, TcpProxy("127.0.0.1", a) as proxy:
        first, name = _connect(proxy.port)
        assert name == b"a"
        big = bytes(range(256)) * 4096  # 1 MiB both ways, in many chunks
        threading.Thread(target=first.sendall, args=(big,), daemon=True).start()
        echoed = b""
        while len(echoed) < len(big):
            echoed += first.recv(1 << 16)
        assert echoed == big

        assert proxy.redirect("127.0.0.1", b) == 1
        assert first.recv(4096) == b"", "the connection open at the redirect is closed"
        first.close()
        second, name = _connect(proxy.port)
        assert name == b"b"
        assert (proxy.target, proxy.accepted, proxy.dropped) == (("127.0.0.1", b), 2, 1)

        assert proxy.drop_connections() == 1
        assert second.recv(4096) == b""
        second.close()


def test_a_target_that_is_down_closes_the_client_at_once() -> None:
    with _named_echo(b"a") as a:
        pass  # the port is free again: nothing listens there
    with TcpProxy("127.0.0.1", a) as proxy:
        client = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        assert client.recv(10) == b""
        client.close()
        assert proxy.open_connections == 0
