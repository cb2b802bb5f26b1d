"""A small TCP proxy on loopback that the drill repoints at the new primary
when it promotes it, as the docs advise for the released runtime (whose
driver takes one host only): a PgBouncer or HAProxy repointed at promotion
does the same job.

It relays bytes, nothing more, on an asyncio loop in a thread of its own.
Repointing closes every connection it relays (a client must not stay on a
server that is no longer the primary); pausing stops relaying in both
directions while the connections stay open (a stalled replication link).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import Future
from typing import Any

HOST = "127.0.0.1"
CHUNK = 65_536
START_TIMEOUT_S = 10.0


class TcpProxy:
    def __init__(self, name: str, target_port: int) -> None:
        self.name = name
        self.target_port = target_port
        self.port = 0  # where it listens, once started
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._server: asyncio.Server | None = None
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._flowing: asyncio.Event | None = None
        self._relays: set[asyncio.Task[None]] = set()

    def start(self) -> TcpProxy:
        self._thread.start()
        self._call(self._listen())
        return self

    def repoint(self, target_port: int) -> None:
        """New connections go to target_port; the open ones are closed."""
        self.target_port = target_port
        self._call(self._close_links())

    def pause(self) -> None:
        """Relay nothing more until resume(): the bytes wait in the sockets."""
        self._call(self._set_flowing(False))

    def resume(self) -> None:
        self._call(self._set_flowing(True))

    def drop_connections(self) -> None:
        """Close every relayed connection, dropping the bytes still in transit."""
        self._call(self._close_links())

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT_S)
        self._loop.close()

    # -- on the proxy's loop -------------------------------------------------

    def _call(self, coroutine: Any) -> Any:
        done: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return done.result(START_TIMEOUT_S)

    async def _listen(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server = await self._start_server()

    async def _start_server(self) -> asyncio.Server:
        server = await asyncio.start_server(self._relay, HOST, 0)
        self.port = int(server.sockets[0].getsockname()[1])
        return server

    async def _open_target(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(HOST, self.target_port)

    async def _set_flowing(self, flowing: bool) -> None:
        assert self._flowing is not None
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    async def _close_links(self) -> None:
        for link in list(self._links):
            for writer in link:
                writer.transport.abort()  # no goodbye: what was in transit is gone
        self._links.clear()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._close_links()
        relays = list(self._relays)
        for relay in relays:
            relay.cancel()
        await asyncio.gather(*relays, return_exceptions=True)

    async def _relay(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        """One client's connection, until either side closes it or the proxy stops."""
        relay = asyncio.current_task()
        assert relay is not None
        self._relays.add(relay)
        try:
            await self._connect_and_pump(client_out, client_in)
        except asyncio.CancelledError:
            # The proxy stops: the connection ends here, as a normal return
            # (asyncio's stream server reports a cancelled handler as an error).
            client_out.transport.abort()
        finally:
            self._relays.discard(relay)

    async def _connect_and_pump(
        self, client_out: asyncio.StreamWriter, client_in: asyncio.StreamReader
    ) -> None:
        try:
            server_in, server_out = await self._open_target()
        except OSError:  # nothing listens there (yet): as if the server refused
            client_out.transport.abort()
            return
        link = (client_out, server_out)
        self._links.add(link)
        pumps = [
            asyncio.ensure_future(self._pump(client_in, server_out)),
            asyncio.ensure_future(self._pump(server_in, client_out)),
        ]
        try:
            # Either side closing ends the connection for both.
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for writer in link:
                writer.transport.abort()
            self._links.discard(link)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        assert self._flowing is not None
        with contextlib.suppress(OSError, ConnectionError):
            while True:
                await self._flowing.wait()
                data = await source.read(CHUNK)
                if not data:
                    return
                await self._flowing.wait()  # a pause holds what was read
                sink.write(data)
                await sink.drain()
