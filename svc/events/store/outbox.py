"""Publishing events: stage with an outbox row in the producer's transaction, publish with a
broker confirm after commit, then clear the row (the caller is answered once the confirm came).

This is the one way producers of ours (payments, terminals, test sends) emit events. A
publish that fails or times out after the commit is counted and left to the outbox sweep:
the state change it announces has happened, so callers are never told otherwise. A caller
waits for the confirm at most ``SVC_PUBLISH_TIMEOUT``; a confirm that comes later, within
``CONFIRM_WITHIN``, still clears the outbox row, so a slow broker does not make the sweep send
the event a second time. While RabbitMQ blocks publishing (a memory or disk alarm, see
``svc.amqp.flow``) the publish is not even tried. The outbox row is cleared only once the broker
has confirmed the event, so otherwise it stays for the sweep, and requests are answered without
waiting for an alarm to clear.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from opentelemetry.trace import SpanKind

from svc.amqp.publishing import Broker
from svc.db import Unit
from svc.envelope import Event
from svc.events.model import StoredEvent
from svc.events.store.events import Events
from svc.group_commit import Batcher
from svc.metrics import Metrics
from svc.tracing import Tracing

log = logging.getLogger(__name__)

CLEAR_GATHER = 0.002
CONFIRM_WITHIN = 5.0
"""Seconds a publish after a commit may still be confirmed, and its outbox row cleared, after
its caller stopped waiting (``SVC_PUBLISH_TIMEOUT``); less than ``SVC_OUTBOX_SWEEP_AGE``."""


class Publisher:
    """Stages events in transactions and publishes them once committed."""

    def __init__(
        self,
        broker: Broker,
        events: Events,
        metrics: Metrics,
        timeout: float,
        tracing: Tracing,
        batch_timeout: float | None = None,
    ) -> None:
        self._broker = broker
        self._tracing = tracing
        self._events = events
        self._metrics = metrics
        self._timeout = timeout
        self._batch_timeout = timeout if batch_timeout is None else batch_timeout
        self._held = 0
        """Events left to the sweep since the broker blocked publishing (0: not blocked)."""
        self._sending: set[asyncio.Task[None]] = set()
        """Publishes after a commit still waiting for their confirm."""
        # Confirmed events of concurrent requests share one outbox DELETE.
        self._clear = Batcher(events.published, CLEAR_GATHER)

    async def stage(self, unit: Unit, event: Event, org: str) -> None:
        """Store ``event`` with its outbox row in ``unit``; publish it after the commit."""
        await self._events.insert(unit, event, org)
        unit.after_commit(lambda: self.publish(event, org))

    async def send(self, event: Event, org: str, within: float) -> None:
        """Publish and wait for the broker's confirm, at most ``within`` seconds."""
        tracing = self._tracing
        with tracing.span(
            f"publish {event.type}", SpanKind.PRODUCER, attributes={"svc.event_id": event.id}
        ):
            async with asyncio.timeout(within):
                await self._broker.event(event, org, tracing.traceparent())
        self._metrics.events_published.labels(event.type).inc()

    @property
    def blocked(self) -> bool:
        """The broker blocks publishing now: a publish would wait until the alarm clears."""
        return self._broker.blocked()

    async def send_all(self, stored: Sequence[StoredEvent]) -> None:
        """Publish events again in one write under one deadline
        (``SVC_BATCH_PUBLISH_TIMEOUT``); raises unless every one is confirmed (a nack raises
        ``DeliveryError`` as through aio-pika). Each carries ``svc-again``: its first publish
        may have reached the broker, so dispatchers read the delivery log before sending it.

        The outbox sweep's path: one write for the batch costs a fraction of a publish per
        event.
        """
        if not stored:
            return
        async with asyncio.timeout(self._batch_timeout):
            await self._broker.events_again([(s.event, s.org) for s in stored])
        for s in stored:
            self._metrics.events_published.labels(s.event.type).inc()

    async def publish(self, event: Event, org: str) -> None:
        """Send a committed event and clear its outbox row once confirmed; returns after at
        most ``SVC_PUBLISH_TIMEOUT`` (the confirm may still come, see ``CONFIRM_WITHIN``). A
        failure is left to the sweep."""
        if self._broker.blocked():  # a memory or disk alarm: the outbox row keeps the event
            self._metrics.publish_failures.inc()
            if not self._held:
                log.warning("RabbitMQ blocks publishing; events wait for the outbox sweep")
            self._held += 1
            return
        if self._held:
            log.warning("RabbitMQ takes publishes again; %d events left to the sweep", self._held)
            self._held = 0
        answered = asyncio.get_running_loop().create_future()
        sending = asyncio.create_task(self._confirmed(event, org, answered))
        self._sending.add(sending)
        sending.add_done_callback(self._sending.discard)
        # Past the timeout the caller is answered; the confirm may still come. The caller
        # does not wait for the outbox row's DELETE: a row left by a crash only makes the
        # sweep send the event again.
        await asyncio.wait((answered,), timeout=self._timeout)

    async def _confirmed(self, event: Event, org: str, answered: asyncio.Future[None]) -> None:
        try:
            await self.send(event, org, max(self._timeout, CONFIRM_WITHIN))
        except Exception as exc:  # broker down or slow: the outbox row keeps the event
            self._metrics.publish_failures.inc()
            log.warning("event %s not published yet (%s); the outbox sweep will", event.id, exc)
            return
        finally:
            if not answered.done():
                answered.set_result(None)
        try:
            await self._clear.submit(event.id)
        except Exception as exc:  # the row stays; the sweep publishes it again (a duplicate)
            log.warning("outbox row of %s not cleared: %s", event.id, exc)

    async def close(self) -> None:
        """Stop waiting for confirms (at shutdown): their outbox rows stay for the sweep."""
        for sending in list(self._sending):
            sending.cancel()
        if self._sending:
            await asyncio.wait(set(self._sending))
