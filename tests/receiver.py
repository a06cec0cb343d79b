"""A real aiohttp webhook receiver for tests: records every request, answers as told."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from aiohttp import web


@dataclass
class Received:
    """One request as the receiver saw it."""

    path: str
    headers: dict[str, str]
    body: bytes
    at: float


Behaviour = Callable[[str, int], int | None]
"""Given the path and how many requests that path has had (1-based), a status to answer, or
None to hang without answering."""


async def serve_locally(app: web.Application) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on a free 127.0.0.1 port; the caller cleans the runner up."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None
    port: int = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    return runner, port


@dataclass
class Receiver:
    """Serves on a free port; ``url(path)`` names an endpoint on it."""

    behaviours: dict[str, Behaviour] = field(default_factory=dict)
    delays: dict[str, float] = field(default_factory=dict)
    answer_headers: dict[str, dict[str, str]] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)
    _runner: web.AppRunner | None = None
    _arrived: asyncio.Condition | None = None
    port: int = 0

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._arrived = asyncio.Condition()
        self._runner, self.port = await serve_locally(app)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def on(self, path: str, behaviour: Behaviour) -> None:
        self.behaviours[path] = behaviour

    def slow(self, path: str, seconds: float) -> None:
        """Answer requests to ``path`` only after ``seconds``."""
        self.delays[path] = seconds

    def answer_with(self, path: str, headers: dict[str, str]) -> None:
        """Send these headers with every answer to ``path`` (``Retry-After``, say)."""
        self.answer_headers[path] = headers

    def at(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        count = self._counts[request.path] = self._counts.get(request.path, 0) + 1
        behaviour = self.behaviours.get(request.path, lambda _p, _n: 204)
        status = behaviour(request.path, count)
        record = Received(request.path, dict(request.headers), body, time.time())
        if status is None:
            await asyncio.sleep(3600)
        await asyncio.sleep(self.delays.get(request.path, 0))
        self.received.append(record)
        assert self._arrived is not None
        async with self._arrived:
            self._arrived.notify_all()
        return web.Response(
            status=status, text="received", headers=self.answer_headers.get(request.path)
        )

    async def wait_for(
        self, predicate: Callable[[list[Received]], bool], timeout: float = 15.0
    ) -> list[Received]:
        """Wait until ``predicate(received)`` holds; raises TimeoutError otherwise."""
        assert self._arrived is not None
        async with asyncio.timeout(timeout):
            async with self._arrived:
                await self._arrived.wait_for(lambda: predicate(self.received))
        return self.received
