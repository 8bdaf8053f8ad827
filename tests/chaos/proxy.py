"""A TCP proxy on loopback that a test can cut and restore, for partitions between an agent and the
federation. It runs its own asyncio loop in a thread, so the code under test may block on either side.

``cut`` closes every open connection and black-holes new ones (accepted, never forwarded, never
answered), as a network partition looks to a client: its calls hang until their own timeout."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

CHUNK = 65536


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.cut_count = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._cut = False
        self._writers: set[asyncio.StreamWriter] = set()

    def start(self) -> TcpProxy:
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def cut(self) -> None:
        """From now on nothing passes; connections open now are closed."""
        self._call(self._set_cut(True))
        self.cut_count += 1

    def restore(self) -> None:
        self._call(self._set_cut(False))

    def close(self) -> None:
        if self._server is not None:
            self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def _call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    async def _set_cut(self, cut: bool) -> None:
        self._cut = cut
        for writer in list(self._writers):  # connections from before a cut, and black-holed ones
            writer.close()
        self._writers.clear()

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._set_cut(True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        if self._cut:
            return  # black-holed: held open, never answered, until the cut ends
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while not self._cut and (data := await reader.read(CHUNK)):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
