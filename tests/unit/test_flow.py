"""Broker flow control without a broker: aiormq keeps the blocked state where ``svc.amqp.flow``
reads it, and a publisher whose connection is blocked leaves its events to the outbox sweep
at once, without touching the broker or the outbox row."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import aiormq
import pytest
from aio_pika.abc import AbstractConnection

from svc.amqp import flow
from svc.envelope import new_event
from svc.events.store import outbox
from svc.events.store.outbox import Publisher
from svc.metrics import Metrics
from svc.tracing import Tracing


async def test_aiormq_keeps_the_state_that_ready_waits_on() -> None:
    connection = aiormq.Connection("amqp://guest:guest@127.0.0.1:1/")
    event = flow.unblocked_event(connection)
    assert event is not None, f"aiormq no longer has {flow.UNBLOCKED}: see svc.amqp.flow"
    event.set()
    await asyncio.wait_for(event.wait(), 1)  # what Connection.ready() waits on, after connected


def fake(unblocked: asyncio.Event | None, closed: bool = False) -> AbstractConnection:
    transport = None
    if unblocked is not None:
        underlay = SimpleNamespace(**{flow.UNBLOCKED: unblocked})
        transport = SimpleNamespace(connection=underlay)
    return cast(AbstractConnection, SimpleNamespace(transport=transport, is_closed=closed))


async def test_blocked_follows_aiormqs_event() -> None:
    unblocked = asyncio.Event()
    unblocked.set()
    assert not flow.blocked(fake(unblocked))
    unblocked.clear()  # what aiormq does on connection.blocked
    assert flow.blocked(fake(unblocked))
    assert not flow.blocked(fake(unblocked, closed=True)), "closed: gone, not blocked"
    assert not flow.blocked(fake(None)), "a robust connection between two connections"


class Exchange:
    name = "svc.events"

    def __init__(self) -> None:
        self.published: list[str] = []

    async def publish(self, message: Any, routing_key: str) -> None:
        self.published.append(routing_key)


class Broker:
    """What a publisher asks of ``svc.amqp.publishing.Broker``: blocked or not, and a publish."""

    def __init__(self, exchange: Exchange, blocked: list[bool]) -> None:
        self._exchange = exchange
        self._blocked = blocked

    def blocked(self) -> bool:
        return self._blocked[0]

    async def event(self, event: Any, org: str, traceparent: str | None = None) -> None:
        await self._exchange.publish(None, routing_key=event.type)


class Events:
    def __init__(self) -> None:
        self.cleared: list[str] = []
        self.gate: asyncio.Event | None = None
        """When set: the outbox DELETE waits for it (PostgreSQL slow to take it)."""

    async def published(self, ids: list[str], unit: object = None) -> list[None]:
        if self.gate is not None:
            await self.gate.wait()
        self.cleared.extend(ids)
        return [None] * len(ids)


def publisher(blocked: list[bool]) -> tuple[Publisher, Exchange, Events, Metrics]:
    exchange, events, metrics = Exchange(), Events(), Metrics()
    made = Publisher(
        cast(Any, Broker(exchange, blocked)), cast(Any, events), metrics, 0.5, Tracing()
    )
    return made, exchange, events, metrics


def failures(metrics: Metrics) -> float:
    value = metrics.registry.get_sample_value("svc_event_publish_failures_total")
    assert value is not None
    return value


async def test_a_blocked_publisher_leaves_the_event_to_the_sweep_without_waiting() -> None:
    blocked = [True]
    made, exchange, events, metrics = publisher(blocked)
    event = new_event("payment.created", "test", {"id": "pay_1"})
    async with asyncio.timeout(0.05):
        await made.publish(event, "org_1")
    assert exchange.published == [] and events.cleared == [], "not sent, the outbox row stays"
    assert failures(metrics) == 1

    blocked[0] = False
    await made.publish(event, "org_1")
    assert exchange.published == ["payment.created"]
    await asyncio.sleep(0.05)  # the DELETE follows the answer
    assert events.cleared == [event.id], "cleared once confirmed"
    assert failures(metrics) == 1


async def test_a_publish_past_its_deadline_keeps_the_outbox_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(outbox, "CONFIRM_WITHIN", 0.8)
    made, exchange, events, metrics = publisher([False])

    async def never(message: Any, routing_key: str) -> None:
        await asyncio.sleep(10)  # a confirm that does not come (the broker blocked us)

    exchange.publish = never  # type: ignore[method-assign]
    started = asyncio.get_running_loop().time()
    await made.publish(new_event("payment.created", "test", {"id": "pay_2"}), "org_1")
    assert asyncio.get_running_loop().time() - started < 0.6, "SVC_PUBLISH_TIMEOUT bounds it"
    assert events.cleared == [] and failures(metrics) == 0, "the confirm may still come"
    await asyncio.sleep(0.5)
    assert events.cleared == [] and failures(metrics) == 1, "given up: the sweep sends it"


async def test_a_late_confirm_still_clears_the_outbox_row() -> None:
    made, exchange, events, metrics = publisher([False])

    async def slow(message: Any, routing_key: str) -> None:
        await asyncio.sleep(0.8)  # confirmed after the request stopped waiting

    exchange.publish = slow  # type: ignore[method-assign]
    event = new_event("payment.created", "test", {"id": "pay_3"})
    started = asyncio.get_running_loop().time()
    await made.publish(event, "org_1")
    assert asyncio.get_running_loop().time() - started < 0.6
    await asyncio.sleep(0.5)
    assert events.cleared == [event.id], "the sweep will not send it a second time"
    assert failures(metrics) == 0

    async def hanging(message: Any, routing_key: str) -> None:
        await asyncio.sleep(10)

    exchange.publish = hanging  # type: ignore[method-assign]
    await made.publish(new_event("payment.created", "test", {"id": "pay_4"}), "org_1")
    async with asyncio.timeout(0.1):
        await made.close()  # at shutdown: the pending confirm is given up, the row stays
    assert events.cleared == [event.id]


async def test_the_caller_is_answered_on_the_confirm_not_on_the_outbox_delete() -> None:
    made, exchange, events, metrics = publisher([False])
    deleting = events.gate = asyncio.Event()
    event = new_event("payment.created", "test", {"id": "pay_5"})
    async with asyncio.timeout(0.3):  # well before SVC_PUBLISH_TIMEOUT (0.5 s)
        await made.publish(event, "org_1")
    assert exchange.published == ["payment.created"] and events.cleared == []
    deleting.set()
    await asyncio.sleep(0.05)
    assert events.cleared == [event.id], "the row is still cleared once confirmed"
    assert failures(metrics) == 0
