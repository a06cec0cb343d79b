"""Webhook receivers: aiohttp servers on 127.0.0.1 that answer as told and record what came."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson
from aiohttp import web

from svc.signing import SIGNATURE_HEADER, SignatureError, verify

EVENT_TYPE = "payment.created"

Behaviour = Callable[[str, int], int | None]
"""Given the path and its request count (1-based), a status to answer, or None to hang."""


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass(frozen=True, slots=True)
class Receipt:
    """One verified delivery answered 204 (``at`` on the monotonic clock)."""

    event_id: str
    payment_id: str
    at: float


@dataclass
class Endpoint:
    secret: str
    receipts: list[Receipt] = field(default_factory=list)
    bad_signatures: int = 0


async def serve_locally(app: web.Application, port: int = 0) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on 127.0.0.1 (a free port by default); the caller cleans the runner up."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, reuse_address=True).start()
    return runner, runner.addresses[0][1]


class Receiver:
    """One aiohttp server; ``url(path)`` names an endpoint on it."""

    def __init__(self, name: str = "receiver") -> None:
        self.name = name
        self.port = 0
        self.behaviours: dict[str, Behaviour] = {}
        self.delays: dict[str, float] = {}
        self.answer_headers: dict[str, dict[str, str]] = {}
        self.failing: set[str] = set()  # paths answered 503 for now
        self.endpoints: dict[str, Endpoint] = {}
        self.received: list[Received] = []
        self._counts: dict[str, int] = {}
        self._arrived = asyncio.Condition()
        self._runner: web.AppRunner | None = None

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

    def add(self, path: str, secret: str) -> None:
        """Verify deliveries to ``path`` with ``secret`` and keep their receipts."""
        self.endpoints[path] = Endpoint(secret)

    def at(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    async def start(self) -> None:
        """Listen (again, on the same port)."""
        if self._runner is None:
            app = web.Application(client_max_size=1 << 20)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner, self.port = await serve_locally(app, self.port)

    async def stop(self) -> None:
        """Close every connection; new ones are refused until ``start``."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> Receiver:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        arrived = time.time()
        body = await request.read()
        path = request.path
        count = self._counts[path] = self._counts.get(path, 0) + 1
        behaviour: Behaviour = self.behaviours.get(path, lambda _p, _n: 204)
        status = 503 if path in self.failing else behaviour(path, count)
        if status is None:
            await asyncio.sleep(3600)
            status = 504
        await asyncio.sleep(self.delays.get(path, 0))
        endpoint = self.endpoints.get(path)
        if endpoint is None:
            self.received.append(Received(path, dict(request.headers), body, arrived))
        elif status == 204:
            try:
                verify(request.headers.get(SIGNATURE_HEADER, ""), body, endpoint.secret)
            except SignatureError:
                endpoint.bad_signatures += 1
                status = 400
            else:
                envelope = orjson.loads(body)
                if envelope.get("type") == EVENT_TYPE:
                    receipt = Receipt(envelope["id"], envelope["data"]["id"], time.monotonic())
                    endpoint.receipts.append(receipt)
        async with self._arrived:
            self._arrived.notify_all()
        return web.Response(status=status, text="received", headers=self.answer_headers.get(path))

    async def wait_for(
        self,
        predicate: Callable[[list[Received]], bool],
        timeout: float = 15.0,  # noqa: ASYNC109 (a bound on the whole wait, as the tests name it)
    ) -> list[Received]:
        """Wait until ``predicate(received)`` holds; raises TimeoutError otherwise."""
        async with asyncio.timeout(timeout):
            async with self._arrived:
                await self._arrived.wait_for(lambda: predicate(self.received))
        return self.received
