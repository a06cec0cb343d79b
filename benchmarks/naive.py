"""The naive ceiling: a bare aio-pika consumer that signs, POSTs with aiohttp and acks.

No endpoint lookup, no delivery log, no metrics, no retry hand-off, no per-endpoint cap: the
job message carries the URL and secret. Worker: ``python -m benchmarks.naive AMQP_URL QUEUE``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aio_pika
import aiohttp
from aio_pika.abc import AbstractIncomingMessage, AbstractRobustConnection

from benchmarks.workload import System, Target, paced, payment_event
from harness.cleanup import delete_queues
from harness.processes import Processes

PREFETCH = 300


@dataclass
class NaiveSystem(System):
    """The naive consumer in ``processes`` processes, fed through one durable queue."""

    procs: Processes
    amqp_url: str
    processes: int
    name: str
    queue: str = field(default_factory=lambda: f"bench{uuid.uuid4().hex[:10]}.naive")
    _connection: AbstractRobustConnection | None = None
    _started: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        plural = "es" if self.processes > 1 else ""
        self.label = f"naive aio-pika, {self.processes} process{plural}"

    async def publish(self, targets: Sequence[Target], count: int, rate: float) -> dict[str, int]:
        if self._connection is None:
            self._connection = await aio_pika.connect_robust(self.amqp_url)
        channel = await self._connection.channel(publisher_confirms=True)
        await channel.declare_queue(self.queue, durable=True)
        made: list[tuple[str, int]] = [("", 0)] * count

        async def send(seq: int) -> None:
            event = payment_event(seq)
            target = targets[seq % len(targets)]
            made[seq] = (event.id, event.created_ms)
            message = aio_pika.Message(
                event.body,
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                headers={"url": target.url, "secret": target.secret, "event-id": event.id},
            )
            await channel.default_exchange.publish(message, routing_key=self.queue)

        await paced(count, rate, send)
        await channel.close()
        return dict(made)

    async def start(self) -> None:
        command = [sys.executable, "-m", "benchmarks.naive", self.amqp_url, self.queue]
        for index in range(self.processes):
            self._started.append(self.procs.start(f"{self.name}-{index}", command, {}))

    async def stop(self) -> None:
        for process in self._started:
            await self.procs.stop(process, grace=5)
        self._started = []

    async def close(self) -> None:
        await self.stop()
        if self._connection is not None:
            await self._connection.close()
        await delete_queues(self.amqp_url, [self.queue])

    def cpu_groups(self) -> dict[str, list[int]]:
        return {"worker": [p.pid for p in self._started]}


def new_target(url: str) -> Target:
    return Target(url, "whsec_" + secrets.token_urlsafe(32))


async def work(amqp_url: str, queue_name: str) -> None:
    """Consume → sign → POST → ack, until killed."""
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel()
    await channel.set_qos(prefetch_count=PREFETCH)
    queue = await channel.declare_queue(queue_name, durable=True)
    keyed: dict[str, Any] = {}
    connector = aiohttp.TCPConnector(limit=PREFETCH)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def on_message(message: AbstractIncomingMessage) -> None:
            headers = message.headers
            secret = str(headers["secret"])
            mac = keyed.get(secret)
            if mac is None:
                mac = keyed[secret] = hmac.new(secret.encode(), digestmod=hashlib.sha256)
            signing = mac.copy()
            now = int(time.time())
            signing.update(b"%d." % now)
            signing.update(message.body)
            request_headers = {
                "Content-Type": "application/json",
                "Svc-Signature": f"t={now},v1={signing.hexdigest()}",
                "Svc-Event-Id": str(headers["event-id"]),
            }
            try:
                async with session.post(
                    str(headers["url"]), data=message.body, headers=request_headers
                ) as response:
                    await response.read()
                    ok = 200 <= response.status <= 299
            except aiohttp.ClientError:
                ok = False
            if ok:
                await message.ack()
            else:
                await message.nack(requeue=True)

        await queue.consume(on_message)
        await asyncio.Future()


def main() -> None:
    try:
        import uvloop  # the service runs on uvloop too, so the ceiling does as well
    except ImportError:
        asyncio.run(work(sys.argv[1], sys.argv[2]))
    else:
        uvloop.run(work(sys.argv[1], sys.argv[2]))


if __name__ == "__main__":
    main()
