"""Steady payment load: ``POST /v1/payments`` at a fixed rate, retried as a careful client would."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field

import aiohttp
import orjson

from harness.ports import cancel

PATH = "/v1/payments"
CONTENT_TYPE = "application/x-www-form-urlencoded"
BODY = b"amount=2450&currency=CHF&channel=online&success_url=https%3A%2F%2Fshop.example%2Fdone"
RETRIED = frozenset({0, 408, 409, 425, 429})  # and 5xx
TRIES = 10
FIRST_BACKOFF = 0.25
MAX_BACKOFF = 4.0
TRY_TIMEOUT = 10.0


@dataclass
class Request:
    """One payment as the client saw it; a status 0 is a transport error or time-out, -1 not
    finished; ``unhinted`` counts 503 answers without ``Retry-After``."""

    key: str
    sent: float
    status: int = -1
    tries: int = 0
    payment_id: str | None = None
    accepted: float | None = None
    answers: list[int] = field(default_factory=list)
    unhinted: int = 0


class Load:
    """Creates payments at ``rate`` per second until ``stop``; ``requests`` records each one."""

    def __init__(self, api_url: str, api_key: str, rate: float, prefix: str) -> None:
        self._api_url = api_url
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": CONTENT_TYPE}
        self._rate = rate
        self._prefix = prefix
        self.requests: list[Request] = []

    async def run(self, stop: asyncio.Event, finish_within: float) -> None:
        """Send until ``stop`` is set, then give requests still retrying ``finish_within``."""
        connector = aiohttp.TCPConnector(limit=0)  # no cap: no try waits for a connection
        timeout = aiohttp.ClientTimeout(total=TRY_TIMEOUT)
        async with aiohttp.ClientSession(self._api_url, connector=connector, timeout=timeout) as s:
            next_at = time.monotonic()
            clients: list[asyncio.Task[None]] = []
            while not stop.is_set():
                request = Request(f"{self._prefix}-{uuid.uuid4().hex}", time.monotonic())
                self.requests.append(request)
                clients.append(asyncio.create_task(self._client(s, request)))
                next_at += 1 / self._rate
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), max(0.0, next_at - time.monotonic()))
            if clients:
                _, late = await asyncio.wait(clients, timeout=finish_within)
                await cancel(*late)

    async def _client(self, session: aiohttp.ClientSession, request: Request) -> None:
        headers = {**self._headers, "Idempotency-Key": request.key}
        while request.tries < TRIES:
            request.tries += 1
            answer: dict[str, str] = {}
            body = b""
            try:
                async with session.post(PATH, data=BODY, headers=headers) as response:
                    body = await response.read()
                    request.status = response.status
                    answer = dict(response.headers)
            except (aiohttp.ClientError, TimeoutError):
                request.status = 0
            request.answers.append(request.status)
            if request.status == 503 and "Retry-After" not in answer:
                request.unhinted += 1
            if request.status == 201:
                request.payment_id = str(orjson.loads(body)["id"])
                request.accepted = time.monotonic()
                return
            if request.status not in RETRIED and request.status < 500:
                return
            if request.tries < TRIES:
                backoff = min(FIRST_BACKOFF * 2 ** (request.tries - 1), MAX_BACKOFF)
                with contextlib.suppress(ValueError):  # a server's hint, up to 5 s
                    backoff = max(backoff, min(float(answer.get("Retry-After", "0")), 5.0))
                await asyncio.sleep(backoff)
