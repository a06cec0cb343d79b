"""A TCP proxy in front of PostgreSQL that counts statements and round trips.

Clients connect with ``sslmode=disable`` (the URL of ``PgCounter.url``) so the protocol is
readable. A statement is a simple ``Query`` or an extended-protocol ``Execute`` the client
sent; a round trip is a ``ReadyForQuery`` the server answered (one per simple query or
``Sync``: what a client waits for before it goes on). Only the counting pass goes through
the proxy: it costs the harness CPU and every message a hop.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from harness.ports import free_port


@dataclass
class Counts:
    statements: int = 0
    round_trips: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    """Client messages by type: ``Q`` query, ``P`` parse, ``B`` bind, ``E`` execute, ``S``
    sync; and server ``Z`` ready-for-query."""

    def add(self, kind: str) -> None:
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
        if kind in ("Q", "E"):
            self.statements += 1
        elif kind == "Z":
            self.round_trips += 1


class Messages:
    """Splits one direction of a PostgreSQL connection into message types."""

    def __init__(self, untyped: int, sent: bool) -> None:
        self._buffer = bytearray()
        self._sent = sent
        """The client's direction (its message types are counted, the server's only ``Z``)."""
        self._untyped = untyped
        """Messages to come without a type byte (the client's startup, after SSLRequest)."""

    def feed(self, data: bytes) -> list[str]:
        self._buffer += data
        kinds: list[str] = []
        while True:
            head = 0 if self._untyped else 1
            if len(self._buffer) < head + 4:
                return kinds
            length = int.from_bytes(self._buffer[head : head + 4], "big")
            if len(self._buffer) < head + length:
                return kinds
            if self._untyped:
                self._untyped -= 1
                kinds.append("startup")
            else:
                kind = chr(self._buffer[0])
                if self._sent or kind == "Z":
                    kinds.append(kind)
            del self._buffer[: head + length]


class PgCounter:
    """Listens on a free local port and forwards to the server of ``database_url``."""

    def __init__(self, database_url: str) -> None:
        self._target = urlsplit(database_url)
        self.port = free_port()
        self.counts = Counts()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        """``database_url`` through the proxy, without TLS."""
        target = self._target
        auth = target.netloc.rpartition("@")[0]
        netloc = f"{auth}@127.0.0.1:{self.port}" if auth else f"127.0.0.1:{self.port}"
        query = "&".join(q for q in (target.query, "sslmode=disable") if q)
        return urlunsplit((target.scheme, netloc, target.path, query, ""))

    def reset(self) -> Counts:
        """The counts so far; counting starts again from zero."""
        counts, self.counts = self.counts, Counts()
        return counts

    async def __aenter__(self) -> PgCounter:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host = self._target.hostname or "127.0.0.1"
        try:
            up_reader, up_writer = await asyncio.open_connection(host, self._target.port or 5432)
        except OSError:
            writer.close()
            return

        async def pump(
            source: asyncio.StreamReader, sink: asyncio.StreamWriter, parser: Messages
        ) -> None:
            while data := await source.read(65536):
                for kind in parser.feed(data):
                    if kind != "startup":
                        self.counts.add(kind)
                sink.write(data)
                await sink.drain()

        # With sslmode=disable the client's first message, its startup, has no type byte.
        tasks = [
            asyncio.create_task(pump(reader, up_writer, Messages(untyped=1, sent=True))),
            asyncio.create_task(pump(up_reader, writer, Messages(untyped=0, sent=False))),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for w in (writer, up_writer):
                w.close()
