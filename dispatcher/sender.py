"""Sending one signed delivery: one keep-alive session, 10 s total, no redirects, capped read."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import aiohttp
from aiohttp.resolver import DefaultResolver

from dispatcher.classify import outcome_of_error, outcome_of_status
from dispatcher.endpoints import Target
from dispatcher.errors import BlockedTarget
from dispatcher.guard import GuardedResolver
from svc import __version__
from svc.jobs import DeliveryJob
from svc.settings import Settings
from svc.signing import SIGNATURE_HEADER

USER_AGENT = f"svc-webhooks/{__version__}"


@dataclass(slots=True)  # not frozen: one is made per delivery, and frozen inits are slow
class Result:
    """What one attempt produced."""

    outcome: str
    status_code: int | None
    error: str | None
    duration: float
    response_body: str

    @property
    def ok(self) -> bool:
        return self.outcome == "success"


def open_session(settings: Settings) -> aiohttp.ClientSession:
    """The process's one client session; private targets are refused unless allowed."""
    resolver = DefaultResolver()
    connector = aiohttp.TCPConnector(
        limit=settings.dispatcher_concurrency,
        limit_per_host=0,
        ttl_dns_cache=10,
        resolver=resolver if settings.allow_private_targets else GuardedResolver(resolver),
    )
    return aiohttp.ClientSession(
        connector=connector,
        # One deadline for connect, send and reading the capped head (the connection is
        # released only after that read); aiohttp would round a total above ``ceil_threshold``
        # up to the next whole second, letting an exchange run nearly a second past the limit.
        timeout=aiohttp.ClientTimeout(total=settings.delivery_timeout, ceil_threshold=math.inf),
        cookie_jar=aiohttp.DummyCookieJar(),  # never carry one endpoint's cookies to another
        auto_decompress=False,
        skip_auto_headers=("Accept-Encoding",),
    )


async def read_head(content: aiohttp.StreamReader, limit: int) -> bytes:
    """The first ``limit`` bytes of a body, or all of a shorter one: a single ``read`` may
    return a first chunk only, and a body trickled past the deadline must time out."""
    head = bytearray()
    while len(head) < limit:
        chunk = await content.read(limit - len(head))
        if not chunk:
            break
        head += chunk
    return bytes(head)


class Sender:
    """Signs and POSTs job bodies; ``SVC_DELIVERY_TIMEOUT`` bounds each whole exchange."""

    def __init__(self, session: aiohttp.ClientSession, settings: Settings) -> None:
        self._session = session
        self._limit = settings.response_body_limit
        self._check_literals = not settings.allow_private_targets

    async def send(self, target: Target, job: DeliveryJob) -> Result:
        started = time.perf_counter()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            SIGNATURE_HEADER: target.signer.header(job.body, int(time.time())),
            "Svc-Event-Id": job.event_id,
            "Svc-Event-Type": job.event_type,
            "Svc-Attempt": str(job.attempt),
        }
        try:
            if self._check_literals and target.private_literal:
                raise BlockedTarget(target.url.host)
            # Connect, send and read the capped head under the session's one exact deadline.
            async with self._session.post(
                target.url, data=job.body, headers=headers, allow_redirects=False
            ) as response:
                head = await read_head(response.content, self._limit)
                status = response.status
        except Exception as exc:  # every transport failure is an outcome, not a crash
            outcome = outcome_of_error(exc)
            return Result(outcome, None, outcome, time.perf_counter() - started, "")
        text = head.decode("utf-8", "replace")
        return Result(outcome_of_status(status), status, None, time.perf_counter() - started, text)
