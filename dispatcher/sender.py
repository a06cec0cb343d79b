"""Sending one signed delivery: one keep-alive session, 10 s total, no redirects, capped read;
through the egress proxy when one is set (``dispatcher.egress``). A RabbitMQ destination's
delivery is published instead (``svc.amqp.destinations``), under the same deadline; it
connects to its broker directly, never through the egress proxy."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime

import aiohttp
from aiohttp.abc import AbstractResolver
from aiohttp.resolver import DefaultResolver
from opentelemetry.trace import SpanKind

from dispatcher.classify import describe, logged_outcome, outcome_of_error, outcome_of_status
from dispatcher.delivery import Delivery
from dispatcher.egress import Egress
from dispatcher.endpoints import Target
from dispatcher.errors import BlockedTarget
from dispatcher.guard import GuardedResolver, address_of
from svc.amqp.destinations import Destinations
from svc.destinations import Broker
from svc.settings import Settings
from svc.tracing import Tracing

log = logging.getLogger(__name__)

PAUSING = (429, 503)  # answers whose Retry-After pauses the endpoint


@dataclass(slots=True)  # not frozen: one is made per delivery, and frozen inits are slow
class Result:
    """What one attempt produced."""

    outcome: str
    """For the metrics, spans and the dispatcher's log."""
    status_code: int | None
    error: str | None
    """What failed, in words, for the delivery log the endpoint's owner reads
    (``classify.describe``); None when a response came."""
    duration: float
    response_body: str
    retry_after: float | None = None
    """Seconds a 429 or 503 asked to wait with ``Retry-After``."""
    shown: str | None = None
    """The outcome the delivery log records of a transport failure
    (``classify.logged_outcome``)."""

    @property
    def ok(self) -> bool:
        return self.outcome == "success"

    @property
    def logged_outcome(self) -> str:
        """The outcome the delivery log records: ``shown`` for a failure without a response,
        else ``outcome``."""
        return self.outcome if self.shown is None else self.shown


def target_resolver(settings: Settings, exempt: tuple[str, int] | None = None) -> AbstractResolver:
    """The resolver of delivery targets: only public addresses unless private targets are
    allowed; ``exempt`` (the egress proxy's host and port) resolves as it is."""
    resolver = DefaultResolver()
    return resolver if settings.allow_private_targets else GuardedResolver(resolver, exempt)


def open_session(settings: Settings) -> aiohttp.ClientSession:
    """The process's one client session; private targets are refused unless allowed."""
    proxy = Egress(settings, DefaultResolver()).exempt if settings.egress_proxy else None
    connector = aiohttp.TCPConnector(
        limit=settings.dispatcher_concurrency,
        limit_per_host=0,
        ttl_dns_cache=10,
        resolver=target_resolver(settings, proxy),
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

    def __init__(
        self, session: aiohttp.ClientSession, settings: Settings, tracing: Tracing | None = None
    ) -> None:
        self._session = session
        self._tracing = tracing if tracing is not None and tracing.enabled else None
        self._limit = settings.response_body_limit
        self._timeout = settings.delivery_timeout
        self._refuse_blocked = not settings.allow_private_targets
        resolver = target_resolver(settings)
        self._egress = Egress(settings, resolver) if settings.egress_proxy else None
        # A broker is connected at the address the targets' resolver gives (public only,
        # unless private targets are allowed).
        self._brokers = Destinations(functools.partial(address_of, resolver))

    async def close(self) -> None:
        """Close the connections to RabbitMQ destinations."""
        await self._brokers.close()

    async def send(self, target: Target, job: Delivery) -> Result:
        """One attempt's outcome; recorded as a span once it is known when tracing is on and
        the attempt's trace is sampled (an attempt of a trace left out pays a look at its
        parent's flags)."""
        tracing = self._tracing
        parent = None if tracing is None else tracing.parent(job.traceparent)
        if tracing is None or parent is None:
            return await self._send(target, job)
        started = time.time_ns()
        name = f"deliver {job.event_type}"
        try:
            result = await self._send(target, job)
        except BaseException:  # cancelled: the attempt's span ends without an outcome
            tracing.record(name, SpanKind.CLIENT, parent, started)
            raise
        error = None if result.ok else result.outcome
        attributes = _attributes(target, job, result)
        tracing.record(name, SpanKind.CLIENT, parent, started, attributes, error)
        return result

    async def _send(self, target: Target, job: Delivery) -> Result:
        started = time.perf_counter()
        headers = target.signing.headers(job, job.signed_at or time.time())
        if target.broker is not None:
            return await self._publish(target, target.broker, job, headers, started)
        url = target.url
        try:
            if self._refuse_blocked and target.blocked_host:
                raise BlockedTarget(url.host)
            egress = self._egress
            if egress is None or egress.direct(url.host or ""):
                request = self._session.post(
                    url,
                    data=job.body,
                    headers=headers,
                    allow_redirects=False,
                    ssl=target.ssl or True,
                )
            else:
                route = await egress.route(url)
                headers["Host"] = route.host
                request = self._session.post(
                    route.url,
                    data=job.body,
                    headers=headers,
                    allow_redirects=False,
                    proxy=egress.proxy,
                    server_hostname=route.server_hostname,
                    ssl=target.ssl or True,
                )
            # Connect, send and read the capped head under the session's one exact deadline.
            async with request as response:
                head = await read_head(response.content, self._limit)
                status = response.status
                retry_after = response.headers.get("Retry-After") if status in PAUSING else None
        except Exception as exc:  # every transport failure is an outcome, not a crash
            return self._failed(exc, target, url.host or "", url.port or 0, started)
        text = head.decode("utf-8", "replace")
        result = Result(
            outcome_of_status(status), status, None, time.perf_counter() - started, text
        )
        if retry_after is not None:
            result.retry_after = retry_after_seconds(retry_after, time.time())
        return result

    async def _publish(
        self, target: Target, broker: Broker, job: Delivery, headers: dict[str, str], started: float
    ) -> Result:
        """One delivery to a RabbitMQ destination: the broker's confirm is its success."""
        routing_key = broker.routing_key or job.event_type
        try:
            if self._refuse_blocked and target.blocked_host:
                raise BlockedTarget(broker.host)
            async with asyncio.timeout(self._timeout):
                await self._brokers.publish(
                    broker, target.ssl, job.body, headers, routing_key, job.event_id
                )
        except Exception as exc:  # every failure is an outcome, not a crash
            return self._failed(exc, target, broker.host, broker.port, started)
        return Result("success", None, None, time.perf_counter() - started, "")

    def _failed(
        self, exc: Exception, target: Target, host: str, port: int, started: float
    ) -> Result:
        outcome = outcome_of_error(exc)
        shown = logged_outcome(exc, outcome)
        if shown != outcome:
            log.info("delivery to %s refused: %s", target.id, exc)
        duration = time.perf_counter() - started
        error = describe(exc, shown, host, port, self._timeout)
        return Result(outcome, None, error, duration, "", shown=shown)


def _attributes(target: Target, job: Delivery, result: Result) -> dict[str, str | int]:
    """What a recorded attempt's span says of it."""
    attributes: dict[str, str | int] = {
        "svc.event_id": job.event_id,
        "svc.endpoint_id": target.id,
        "svc.attempt": job.attempt,
        "svc.trigger": job.trigger,
        "svc.outcome": result.outcome,
    }
    if result.status_code is not None:
        attributes["http.response.status_code"] = result.status_code
    return attributes


def retry_after_seconds(value: str, now: float) -> float | None:
    """Seconds a ``Retry-After`` value asks to wait (delay-seconds or an HTTP date), or None
    when it is neither; a date in the past is 0."""
    value = value.strip()
    if value.isdigit():
        return float(int(value))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # HTTP dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)
