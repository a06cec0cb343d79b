"""What teams build instead, driven like the service: the naive aio-pika consumer (the ceiling
of the architecture: a pre-keyed HMAC, an aiohttp POST and an ack, URL and secret in the job;
``python -m benchmarks.baselines AMQP_URL QUEUE``), Celery (prefork, gevent) and Dramatiq (the
workers of ``benchmarks.workers``, fed by their own clients in a thread)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import aio_pika
import aiohttp
from aio_pika.abc import AbstractIncomingMessage

from benchmarks.workload import System, Target, paced, payment_event, run_fast
from harness.cleanup import delete_queues
from harness.processes import Processes

PREFETCH = 300
LABELS = {
    "naive1": "naive aio-pika, 1 process",
    "naive2": "naive aio-pika, 2 processes",
    "celery-prefork": "Celery prefork ×2",
    "celery-gevent": "Celery gevent ×100",
    "dramatiq": "Dramatiq 2×8",
}
BIN = os.path.dirname(sys.executable)


@dataclass
class Baseline(System):
    """One of ``LABELS``, its workers fed through one durable queue of its own."""

    procs: Processes
    amqp_url: str
    name: str
    queue: str = field(default_factory=lambda: f"bench{uuid.uuid4().hex[:10]}_jobs")
    _workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.label = LABELS[self.name]

    async def publish(self, targets: Sequence[Target], count: int, rate: float) -> dict[str, int]:
        if not self.name.startswith("naive"):
            return await asyncio.to_thread(self._produce, targets, count, rate)
        created: dict[str, int] = {}
        async with await aio_pika.connect(self.amqp_url) as connection:
            channel = await connection.channel(publisher_confirms=True)
            await channel.declare_queue(self.queue, durable=True)

            async def send(seq: int) -> None:
                event, target = payment_event(seq), targets[seq % len(targets)]
                created[event.id] = event.created_ms
                message = aio_pika.Message(
                    event.body,
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    headers={"url": target.url, "secret": target.secret, "event-id": event.id},
                )
                await channel.default_exchange.publish(message, routing_key=self.queue)

            await paced(count, rate, send)
        return created

    def _produce(self, targets: Sequence[Target], count: int, rate: float) -> dict[str, int]:
        """Enqueue with the framework's own synchronous client, at ``rate`` per second."""
        send, close = self._client()
        created, started = {}, time.monotonic()
        for seq in range(count):
            if rate > 0 and (delay := started + seq / rate - time.monotonic()) > 0:
                time.sleep(delay)
            event, target = payment_event(seq), targets[seq % len(targets)]
            send(target.url, target.secret, event.body.decode(), event.id)
            created[event.id] = event.created_ms
        close()  # flush what the client still buffers
        return created

    def _client(self) -> tuple[Callable[..., object], Callable[[], None]]:
        if self.name == "dramatiq":
            from dramatiq import Message
            from dramatiq.brokers.rabbitmq import RabbitmqBroker

            broker = RabbitmqBroker(url=self.amqp_url, middleware=[])
            return lambda *job: broker.enqueue(
                Message(self.queue, "deliver", job, {}, {})
            ), broker.close
        from celery import Celery  # type: ignore[import-untyped]

        app = Celery(broker=self.amqp_url, set_as_current=False)
        app.conf.task_default_queue = self.queue
        return lambda *job: app.send_task("deliver", job), app.close

    async def spawn(self) -> None:
        env = {"BENCH_AMQP_URL": self.amqp_url, "BENCH_QUEUE": self.queue}
        if self.name.startswith("naive"):
            command = [sys.executable, "-m", "benchmarks.baselines", self.amqp_url, self.queue]
            commands = [command] * int(self.name[-1])
        elif self.name == "dramatiq":
            commands = [[f"{BIN}/dramatiq", "benchmarks.workers", "-p", "2", "-t", "8"]]
        else:
            pool = self.name.removeprefix("celery-")
            command = [f"{BIN}/celery", "-A", "benchmarks.workers", "worker", "-P", pool, "-c"]
            command += ["2" if pool == "prefork" else "100", "-Q", self.queue, "-l", "WARNING"]
            commands = [[*command, "--without-gossip", "--without-mingle", "--without-heartbeat"]]
            # With a broker heartbeat, Celery 5.7's gevent loop stalls ~0.1 s per message.
            env["BENCH_BROKER_HEARTBEAT"] = "0" if pool == "gevent" else "120"
        for index, command in enumerate(commands):
            self._workers.append(self.procs.start(f"{self.name}-{index}", command, env))

    async def stop(self) -> None:
        # Runs stop workers only once every delivery arrived: nothing is left to drain.
        sig = signal.SIGTERM if self.name.startswith("naive") else signal.SIGQUIT
        for process in self._workers:
            await self.procs.stop(process, grace=10, sig=sig)
        self._workers = []

    async def close(self) -> None:
        await self.stop()
        queues = [self.queue, f"{self.queue}.DQ", f"{self.queue}.XQ"]  # Dramatiq's delay, dead
        await delete_queues(self.amqp_url, queues, [self.queue])  # Celery's exchange

    def cpu_groups(self) -> dict[str, list[int]]:
        return {"worker": [p.pid for p in self._workers]}


async def consume(amqp_url: str, queue_name: str) -> None:
    """The naive consumer: consume, sign, POST, ack (or requeue), until killed."""
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel()
    await channel.set_qos(prefetch_count=PREFETCH)
    queue = await channel.declare_queue(queue_name, durable=True)
    keyed: dict[str, hmac.HMAC] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=PREFETCH)) as session:

        async def on_message(message: AbstractIncomingMessage) -> None:
            secret, url = str(message.headers["secret"]), str(message.headers["url"])
            if secret not in keyed:
                keyed[secret] = hmac.new(secret.encode(), digestmod=hashlib.sha256)
            signing, now = keyed[secret].copy(), int(time.time())
            signing.update(b"%d." % now)
            signing.update(message.body)
            headers = {
                "Content-Type": "application/json",
                "Svc-Signature": f"t={now},v1={signing.hexdigest()}",
                "Svc-Event-Id": str(message.headers["event-id"]),
            }
            try:
                async with session.post(url, data=message.body, headers=headers) as response:
                    await response.read()
                    ok = 200 <= response.status <= 299
            except aiohttp.ClientError:
                ok = False
            await (message.ack() if ok else message.nack(requeue=True))

        await queue.consume(on_message)
        await asyncio.Future()


if __name__ == "__main__":
    run_fast(consume(sys.argv[1], sys.argv[2]))
