"""A hostile MySQL server for tests: it greets like MySQL, then asks for the password in clear text.

What an attacker who can point `database.hostname` at their own machine would run (the issue's
probe used one). It speaks just enough of the protocol (Handshake v10, an AuthSwitchRequest to
`mysql_clear_password`) for a real client to answer, records every connection and every byte the
client sends after the switch, then closes. It stands in for a server that cannot exist here
honestly: no real MySQL would try to steal a password.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType

# Capability flags: LONG_PASSWORD, CONNECT_WITH_DB, PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH.
_CAPABILITIES = 0x1 | 0x8 | 0x200 | 0x8000 | 0x80000


def _packet(seq: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def _greeting() -> bytes:
    salt = b"abcdefghijklmnopqrst"
    return (
        b"\x0a"
        + b"5.7.99-fake\x00"
        + struct.pack("<I", 7)
        + salt[:8]
        + b"\x00"
        + struct.pack("<H", _CAPABILITIES & 0xFFFF)
        + b"\x21"
        + struct.pack("<H", 2)
        + struct.pack("<H", _CAPABILITIES >> 16)
        + bytes([21])
        + b"\x00" * 10
        + salt[8:]
        + b"\x00"
        + b"mysql_native_password\x00"
    )


def _read_packet(conn: socket.socket) -> tuple[int, bytes] | None:
    head = _read(conn, 4)
    if head is None:
        return None
    size = int.from_bytes(head[:3], "little")
    body = _read(conn, size)
    return (head[3], body) if body is not None else None


def _read(conn: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class CleartextAskingServer:
    """Listens on 127.0.0.1; `connections` counts clients, `after_switch` holds what each sent
    after being asked for `mysql_clear_password` (empty when the client refused and hung up)."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port: int = self._sock.getsockname()[1]
        self.connections = 0
        self.after_switch: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-mysql", daemon=True)

    def __enter__(self) -> CleartextAskingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object | TracebackType) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    self._talk(conn)

    def _talk(self, conn: socket.socket) -> None:
        conn.sendall(_packet(0, _greeting()))
        response = _read_packet(conn)
        if response is None:
            return
        seq = response[0] + 1
        conn.sendall(_packet(seq, b"\xfe" + b"mysql_clear_password\x00"))
        answer = _read_packet(conn)
        self.after_switch.append(answer[1] if answer is not None else b"")
        if answer is not None:
            # Access denied, so a client that sent its password fails too (after giving it away).
            error = b"\xff" + struct.pack("<H", 1045) + b"#28000" + b"Access denied"
            conn.sendall(_packet(answer[0] + 1, error))
