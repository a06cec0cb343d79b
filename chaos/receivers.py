"""Webhook receivers on 127.0.0.1: real aiohttp servers that verify every delivery with
``svc.signing.verify`` and record each verified ``payment.created`` event they take.

A receiver serves one endpoint per scenario (the path names the scenario). It can refuse
connections altogether (``down``: its listening socket is closed) or answer 503 on some paths
(``failing``), and comes back on the same port.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import orjson
from aiohttp import web

from harness.ports import free_port
from svc.signing import SIGNATURE_HEADER, SignatureError, verify

EVENT_TYPE = "payment.created"


@dataclass(frozen=True, slots=True)
class Receipt:
    """One verified delivery answered 204; ``at`` is the harness's monotonic clock."""

    event_id: str
    payment_id: str
    at: float


@dataclass
class Endpoint:
    """What a receiver knows of one of its endpoints."""

    secret: str
    receipts: list[Receipt] = field(default_factory=list)
    bad_signatures: int = 0
    refused: int = 0
    """Requests answered 503 on purpose."""


class Receiver:
    """One aiohttp server on its own port; ``endpoints`` maps a path to what it received."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.port = free_port()
        self.endpoints: dict[str, Endpoint] = {}
        self.failing: set[str] = set()
        self._runner: web.AppRunner | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def add(self, path: str, secret: str) -> None:
        self.endpoints[path] = Endpoint(secret)

    @property
    def up(self) -> bool:
        return self._runner is not None

    async def start(self) -> None:
        """Listen (again) on the receiver's port."""
        if self._runner is not None:
            return
        app = web.Application(client_max_size=1 << 20)
        app.router.add_post("/{path:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self.port, reuse_address=True).start()
        self._runner = runner

    async def stop(self) -> None:
        """Close the listening socket and every open connection: connections are refused."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        endpoint = self.endpoints.get(request.path)
        if endpoint is None:
            return web.Response(status=404)
        if request.path in self.failing:
            endpoint.refused += 1
            return web.Response(status=503)
        body = await request.read()
        try:
            verify(request.headers.get(SIGNATURE_HEADER, ""), body, endpoint.secret)
        except SignatureError:
            endpoint.bad_signatures += 1
            return web.Response(status=400)
        envelope = orjson.loads(body)
        if envelope.get("type") == EVENT_TYPE:
            receipt = Receipt(envelope["id"], envelope["data"]["id"], time.monotonic())
            endpoint.receipts.append(receipt)
        return web.Response(status=204)


class Receivers:
    """The healthy receivers and the one whose endpoint of each scenario is down for a while."""

    def __init__(self, healthy: int) -> None:
        self.healthy = [Receiver(f"r{i + 1}") for i in range(healthy)]
        self.flaky = Receiver("flaky")

    @property
    def all(self) -> list[Receiver]:
        return [*self.healthy, self.flaky]

    async def start(self) -> None:
        for receiver in self.all:
            await receiver.start()

    async def stop(self) -> None:
        for receiver in self.all:
            await receiver.stop()
