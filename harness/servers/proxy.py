"""A TCP proxy in front of a server that can hold, slow down or cut its traffic."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

from harness.ports import cancel, free_port

_Chunks = asyncio.Queue[tuple[float, bytes] | None]
"""Chunks read, each with when it is due, then None for the end."""
_Link = tuple[asyncio.StreamWriter, asyncio.StreamWriter]


class TcpProxy:
    """Forwards 127.0.0.1:<port> to a target. ``hold()`` stops passing bytes either way until
    ``release()``; ``slow()`` delays every chunk read from then on (latency, not a throughput
    cap); ``cut()`` resets every open connection; ``close()`` stops listening and drops them."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self.accepted = 0  # connections taken so far
        self.delay = 0.0
        self._open = asyncio.Event()
        self._open.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._links: set[_Link] = set()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def slow(self, seconds: float) -> None:
        self.delay = seconds

    async def __aenter__(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def cut(self) -> int:
        """Reset (RST) both sides of every open connection, dropping every chunk on its way;
        returns how many were cut. New connections are taken as before."""
        links, self._links = self._links, set()
        for client, upstream in links:
            _reset(client)
            _reset(upstream)
        await cancel(*self._tasks)
        return len(links)

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await cancel(*self._tasks)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        link = (writer, up_writer)
        self._links.add(link)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            chunks: _Chunks = asyncio.Queue()
            for work in (self._read(source, chunks), self._send(chunks, sink, link)):
                task = asyncio.create_task(work)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _read(self, source: asyncio.StreamReader, chunks: _Chunks) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await source.read(65536):
                chunks.put_nowait((loop.time() + self.delay, data))
        chunks.put_nowait(None)  # after everything read: the end passes on too

    async def _send(self, chunks: _Chunks, sink: asyncio.StreamWriter, link: _Link) -> None:
        loop = asyncio.get_running_loop()
        try:
            while (chunk := await chunks.get()) is not None:
                due, data = chunk
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
                await self._open.wait()
                sink.write(data)
                await sink.drain()
        except OSError:
            pass
        finally:
            sink.close()  # the other direction then reads its end and closes too
            self._links.discard(link)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close a connection with a reset instead of an orderly end (SO_LINGER 0)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
