"""The failover drill's relay in front of any test server, Unix socket or TCP:
a client that connects through it can be cut off from the server (pause())
while its connection stays open, as on a stalled network link."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg

from drills.failover.proxy import TcpProxy


class SocketRelay(TcpProxy):
    """Listens on a Unix socket of its own (libpq's `.s.PGSQL.<port>` in a
    folder made for it) and relays to the server the URL reaches."""

    def __init__(self, server_url: str) -> None:
        with psycopg.connect(server_url) as conn:  # where the server really is
            self.server_host, server_port = conn.info.host, int(conn.info.port)
        super().__init__("socket-relay", server_port)
        self.folder = Path(tempfile.mkdtemp(prefix="relay-"))
        self.server_url = server_url

    def url(self) -> str:
        """server_url, through the relay."""
        parts = urlsplit(self.server_url)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("host", "port")]
        query.append(("host", str(self.folder)))
        user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        netloc = f"{user}localhost:{self.target_port}"
        return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query, quote_via=quote)))

    async def _start_server(self) -> asyncio.Server:
        socket = self.folder / f".s.PGSQL.{self.target_port}"
        return await asyncio.start_unix_server(self._relay, path=str(socket))

    async def _open_target(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.server_host.startswith("/"):
            socket = f"{self.server_host}/.s.PGSQL.{self.target_port}"
            return await asyncio.open_unix_connection(socket)
        return await asyncio.open_connection(self.server_host, self.target_port)


@contextmanager
def socket_relay(server_url: str) -> Iterator[SocketRelay]:
    relay = SocketRelay(server_url)
    relay.start()
    try:
        yield relay
    finally:
        relay.stop()
        shutil.rmtree(relay.folder, ignore_errors=True)
