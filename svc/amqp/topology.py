"""RabbitMQ topology: the names and queues of the AMQP contract every role and producer relies on.

Names (``<ns>`` is ``SVC_NAMESPACE``):

- exchange ``<ns>.events`` (topic, durable): producers publish events here, routing key =
  event type, body = the envelope bytes, headers ``svc-org`` and ``svc-env`` (required),
  ``svc-event-id`` (read from the body when absent), ``svc-created-ms`` (the time of arrival
  when absent), ``svc-stored`` (true when the producer already stored the event),
  ``svc-again`` (true on an event published again: its deliveries may have been made);
  persistent, with confirms.
- queue ``<ns>.fanout``: bound to every event type; dispatchers deliver each event to its
  subscribers.
- queue ``<ns>.deliveries``: one message per delivery job (see ``svc.amqp.delivery_jobs``): retries,
  resends, test sends, deferrals and hand-offs; dispatchers.
- queue ``<ns>.commands``: resend and test requests from the API to the scheduler.
- queues ``<ns>.delay.<ms>ms``: one per distinct delay, per-queue TTL, dead-lettering back to
  ``<ns>.deliveries``. Named after the delay, so a changed ladder never clashes.
- queue ``<ns>.rejected``: messages of the events exchange the service cannot accept, kept for
  people (nothing consumes it): the original body and headers, plus ``svc-routing-key`` (the
  original routing key), ``svc-rejected-reason`` (a stable code) and ``svc-rejected-detail``.

A producer's event is accepted when its routing key is an event type, ``svc-org`` is the id of
an existing organisation (``org_…``, not its name), ``svc-env`` is ``test`` or ``live`` and the
body is a JSON object with a string ``id`` (ours are ``evt_…``; any 1–255 printable
characters without ``/`` will do).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import aio_pika
import aiormq
from aio_pika.abc import AbstractChannel, AbstractExchange

from svc.ladder import RetryLadder

log = logging.getLogger(__name__)

DEFER_STEPS = 4
"""A job deferred again and again waits SVC_DEFER_DELAY, then twice, four and eight times as
long: the jobs of an endpoint that hangs for minutes pass through the broker a few times a
minute each, not every SVC_DEFER_DELAY."""


@dataclass(frozen=True, slots=True)
class Topology:
    """Exchange and queue names of one namespace."""

    namespace: str
    delays_ms: tuple[int, ...]
    handoff_ms: int
    defer_ms: tuple[int, ...]
    """The delays of a job's first, second, ... deferral (the last one repeats)."""
    queue_type: str = "classic"

    @classmethod
    def build(
        cls,
        namespace: str,
        ladder: RetryLadder,
        defer_ms: int,
        handoff_ms: int,
        queue_type: str = "classic",
    ) -> Topology:
        deferrals = tuple(defer_ms << step for step in range(DEFER_STEPS))
        delays = tuple(sorted({*ladder.delays_ms, *deferrals, handoff_ms}))
        return cls(namespace, delays, handoff_ms, deferrals, queue_type)

    @property
    def events(self) -> str:
        return f"{self.namespace}.events"

    @property
    def fanout(self) -> str:
        return f"{self.namespace}.fanout"

    @property
    def deliveries(self) -> str:
        return f"{self.namespace}.deliveries"

    @property
    def commands(self) -> str:
        return f"{self.namespace}.commands"

    @property
    def rejected(self) -> str:
        return f"{self.namespace}.rejected"

    def delay(self, delay_ms: int) -> str:
        return f"{self.namespace}.delay.{delay_ms}ms"

    def defer_queue(self, deferrals: int) -> str:
        """The delay queue of a job's ``deferrals``-th deferral (counting from 1): each one
        waits twice as long as the one before, from the fourth on eight times the first."""
        return self.delay(self.defer_ms[min(max(deferrals, 1), len(self.defer_ms)) - 1])

    def wait_queue(self, wait_ms: int) -> str:
        """The delay queue for a job that must wait ``wait_ms``: the longest delay not past
        it (the shortest when it is shorter still); the job waits again if it comes early."""
        fitting = [ms for ms in self.delays_ms if ms <= wait_ms]
        return self.delay(fitting[-1] if fitting else self.delays_ms[0])

    def work_queues(self) -> tuple[str, ...]:
        """Every queue of the namespace, for depth metrics."""
        named = (self.fanout, self.deliveries, self.commands, self.rejected)
        return named + tuple(self.delay(ms) for ms in self.delays_ms)

    async def declare(self, channel: AbstractChannel) -> AbstractExchange:
        """Declare everything (idempotent); every role calls it at start-up."""
        exchange = await channel.declare_exchange(
            self.events, aio_pika.ExchangeType.TOPIC, durable=True
        )
        base: dict[str, Any] = {"x-queue-type": self.queue_type}
        fanout = await channel.declare_queue(self.fanout, durable=True, arguments=base)
        await fanout.bind(exchange, routing_key="#")
        for name in (self.deliveries, self.commands, self.rejected):
            await channel.declare_queue(name, durable=True, arguments=base)
        for delay_ms in self.delays_ms:
            await channel.declare_queue(
                self.delay(delay_ms), durable=True, arguments=self._delay_arguments(delay_ms)
            )
        return exchange

    def _delay_arguments(self, delay_ms: int) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "x-queue-type": self.queue_type,
            "x-message-ttl": delay_ms,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": self.deliveries,
        }
        if self.queue_type == "quorum":
            # Quorum queues dead-letter at most once unless told otherwise.
            arguments["x-dead-letter-strategy"] = "at-least-once"
            arguments["x-overflow"] = "reject-publish"
        return arguments


async def underlay(channel: AbstractChannel) -> aiormq.Channel:
    """aiormq's channel under an aio-pika one: where consumers take messages and batches are
    published (see ``svc.amqp.received`` and ``svc.amqp.batch_publish``). A robust channel's
    underlay changes when it reconnects, so callers ask each time."""
    raw = await channel.get_underlay_channel()
    assert isinstance(raw, aiormq.Channel)
    return raw
