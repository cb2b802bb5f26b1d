"""The failover drill's proxy (drills/failover/proxy.py) on plain
sockets: it relays, repointing closes what it relays and sends new
connections to the new target, and a pause holds the bytes until resumed."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from drills.failover.proxy import TcpProxy

TIMEOUT_S = 5.0


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        tag: bytes = self.server.tag  # type: ignore[attr-defined]
        while data := self.request.recv(1024):
            self.request.sendall(tag + data)


@pytest.fixture
def echoes() -> Iterator[tuple[int, int]]:
    """Two echo servers on loopback, answering with their tag first: b'A', b'B'."""
    servers = []
    for tag in (b"A", b"B"):
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
        server.daemon_threads = True
        server.tag = tag  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield servers[0].server_address[1], servers[1].server_address[1]
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def proxy(echoes: tuple[int, int]) -> Iterator[TcpProxy]:
    relay = TcpProxy("test-proxy", echoes[0]).start()
    yield relay
    relay.stop()


def _connected(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)


def _ask(client: socket.socket, data: bytes) -> bytes:
    client.sendall(data)
    return client.recv(1024)


def _closed(client: socket.socket) -> bool:
    """Closed without a goodbye: an empty read, or a reset."""
    try:
        return client.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_relays_to_its_target(proxy: TcpProxy) -> None:
    with _connected(proxy.port) as client:
        assert _ask(client, b"ping") == b"Aping"


def test_repointing_closes_relayed_connections_and_new_ones_reach_the_new_target(
    proxy: TcpProxy, echoes: tuple[int, int]
) -> None:
    with _connected(proxy.port) as before:
        assert _ask(before, b"1") == b"A1"
        proxy.repoint(echoes[1])
        assert _closed(before)
    with _connected(proxy.port) as after:
        assert _ask(after, b"2") == b"B2"


def test_a_pause_holds_the_bytes_until_resumed(proxy: TcpProxy) -> None:
    with _connected(proxy.port) as client:
        assert _ask(client, b"a") == b"Aa"
        proxy.pause()
        client.sendall(b"b")
        client.settimeout(0.3)  # nothing may come meanwhile: time is the subject
        with pytest.raises(TimeoutError):
            client.recv(1024)
        client.settimeout(TIMEOUT_S)
        proxy.resume()
        assert client.recv(1024) == b"Ab"


def test_a_client_whose_target_does_not_answer_is_closed(proxy: TcpProxy) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        nobody = unused.getsockname()[1]  # bound, never listening: refused
        proxy.repoint(nobody)
        with _connected(proxy.port) as client:
            client.sendall(b"x")
            assert _closed(client)
