"""Payments in Redis: every state change and its ``payment.*`` event commit in one transaction.

Each write WATCHes the payment (and its terminal), so two concurrent transitions can never
both apply; the event and its outbox entry are staged in the same MULTI and the caller
publishes the returned event after the commit (``svc.payflow``). Open payments sit in a
deadline set that the scheduler's expiry sweep reads.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from svc import signals
from svc.events import Event, new_event
from svc.payments import Payment, allowed
from svc.store.apikeys import Scope
from svc.store.events import Events
from svc.store.keys import Keys
from svc.store.terminals import parse as parse_terminal
from svc.store.txn import transact
from svc.store.values import blob, text


class TerminalUnavailable(Exception):
    """A terminal payment cannot start; ``reason`` is ``not_found``, ``offline`` or ``busy``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Moved:
    """The payment after a transition attempt; ``event`` is None when nothing changed."""

    payment: Payment
    event: Event | None


def now_ms() -> int:
    return int(time.time() * 1000)


class Payments:
    """Payment storage, retained ``retention_s`` after the last change."""

    def __init__(self, redis: Redis, keys: Keys, events: Events, retention_s: float) -> None:
        self._redis = redis
        self._keys = keys
        self._events = events
        self._retention_ms = int(retention_s * 1000)

    async def get(self, payment_id: str) -> Payment | None:
        raw = await self._redis.get(self._keys.payment(payment_id))
        return None if raw is None else Payment.loads(blob(raw))

    async def get_scoped(self, scope: Scope, payment_id: str) -> Payment | None:
        payment = await self.get(payment_id)
        if payment is None or (payment.org, payment.env) != (scope.org, scope.env):
            return None
        return payment

    def _stage_payment(self, pipe: Pipeline, payment: Payment, event: Event) -> None:
        pipe.set(self._keys.payment(payment.id), payment.dumps(), px=self._retention_ms)
        self._events.stage(pipe, event, payment.org)
        if payment.final:
            pipe.zrem(self._keys.payment_deadlines, payment.id)
        elif payment.expires_ms is not None:
            pipe.zadd(self._keys.payment_deadlines, {payment.id: payment.expires_ms})
        signal = signals.status_signal(payment.id, payment.status)
        pipe.publish(self._keys.signals, signal.dumps())

    async def create(self, payment: Payment) -> Event:
        """Store a new online or phone payment; returns the staged ``payment.created``."""
        event = new_event("payment.created", payment.env, payment.event_data())
        async with self._redis.pipeline(transaction=True) as pipe:
            self._stage_payment(pipe, payment, event)
            await pipe.execute()
        return event

    async def create_on_terminal(self, payment: Payment) -> Event:
        """Store a terminal payment and claim its terminal, or raise TerminalUnavailable."""
        assert payment.terminal_id is not None
        terminal_key = self._keys.terminal(payment.terminal_id)

        async def body(pipe: Pipeline) -> Event:
            raw = await pipe.hgetall(terminal_key)
            terminal = parse_terminal(raw) if raw else None
            if terminal is None or (terminal.org, terminal.env) != (payment.org, payment.env):
                raise TerminalUnavailable("not_found")
            if not terminal.online:
                raise TerminalUnavailable("offline")
            if terminal.current:
                raise TerminalUnavailable("busy")
            event = new_event("payment.created", payment.env, payment.event_data())
            pipe.multi()  # type: ignore[no-untyped-call]
            self._stage_payment(pipe, payment, event)
            pipe.hset(terminal_key, "current", payment.id)
            command = {"kind": "start", "payment_id": payment.id, "conn": terminal.conn}
            signal = signals.Signal(signals.terminal_topic(terminal.id), command)
            pipe.publish(self._keys.signals, signal.dumps())
            return event

        return await transact(self._redis, [terminal_key], body)

    async def transition(
        self,
        payment_id: str,
        status: str,
        changes: dict[str, Any] | None = None,
        from_terminal: str | None = None,
    ) -> Moved | None:
        """Move the payment to ``status`` if allowed; None when the payment does not exist.

        ``from_terminal`` names the terminal reporting the change: it must be the payment's
        own. Otherwise a terminal payment that ends is told to stop on its terminal.
        """
        payment_key = self._keys.payment(payment_id)
        current = await self.get(payment_id)
        if current is None:
            return None
        watch = [payment_key]
        if current.terminal_id is not None:
            watch.append(self._keys.terminal(current.terminal_id))

        async def body(pipe: Pipeline) -> Moved | None:
            raw = await pipe.get(payment_key)
            if raw is None:
                return None
            payment = Payment.loads(blob(raw))
            if not allowed(payment.status, status) or (
                from_terminal is not None and payment.terminal_id != from_terminal
            ):
                return Moved(payment, None)
            moved = payment.moved(status, now_ms(), **(changes or {}))
            terminal = None
            if moved.final and moved.terminal_id is not None:
                terminal_raw = await pipe.hgetall(self._keys.terminal(moved.terminal_id))
                terminal = parse_terminal(terminal_raw) if terminal_raw else None
            event = new_event(f"payment.{status}", moved.env, moved.event_data())
            pipe.multi()  # type: ignore[no-untyped-call]
            self._stage_payment(pipe, moved, event)
            if terminal is not None and terminal.current == moved.id:
                pipe.hset(self._keys.terminal(terminal.id), "current", "")
                if from_terminal is None:
                    command = {"kind": "cancel", "payment_id": moved.id, "conn": terminal.conn}
                    signal = signals.Signal(signals.terminal_topic(terminal.id), command)
                    pipe.publish(self._keys.signals, signal.dumps())
            return Moved(moved, event)

        return await transact(self._redis, watch, body)

    async def add_step(self, payment_id: str, step: str) -> int:
        """Record a progress step of a terminal payment and signal it; returns its number."""
        key = self._keys.payment_steps(payment_id)
        seq = int(await self._redis.rpush(key, step))
        await self._redis.pexpire(key, self._retention_ms)
        signal = signals.progress_signal(payment_id, seq, step)
        await self._redis.publish(self._keys.signals, signal.dumps())
        return seq

    async def steps(self, payment_id: str) -> list[str]:
        found = await self._redis.lrange(self._keys.payment_steps(payment_id), 0, -1)
        return [text(s) for s in found]

    async def due(self, at_ms: int, limit: int = 500) -> list[str]:
        """Open payments whose deadline is at or before ``at_ms``."""
        found = await self._redis.zrangebyscore(
            self._keys.payment_deadlines, "-inf", at_ms, start=0, num=limit
        )
        return [text(f) for f in found]

    async def forget_deadline(self, payment_id: str) -> None:
        await self._redis.zrem(self._keys.payment_deadlines, payment_id)
