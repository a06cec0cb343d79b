"""The real service under test: ``svc scheduler`` and N ``svc dispatcher`` processes.

Events go in the way any producer of ours sends them: stored in Redis, published to the
events exchange with a broker confirm. A preload stores events first and publishes them with
many confirms in flight on one channel; a paced run uses ``publish_event`` (store with an
outbox entry, publish, clear the entry) as the API does.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import sys
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.cleanup import delete_namespace
from benchmarks.procs import Processes, RssSampler, free_port, wait_ready
from benchmarks.workload import EVENT_TYPE, System, Target, paced, payment_event
from svc.amqp import event_message
from svc.context import Context, open_context
from svc.events import Event
from svc.events.emit import publish_event
from svc.orgs import Scope
from svc.settings import Settings

_COUNTERS = {
    "svc_deliveries_total": "deliveries",
    "svc_deliveries_deferred_total": "deferred",
    "svc_retries_scheduled_total": "retries_scheduled",
    "svc_deliveries_exhausted_total": "exhausted",
    "svc_jobs_created_total": "jobs_created",
}


def svc_command() -> list[str]:
    """``svc`` from the running virtualenv, else the module."""
    script = shutil.which("svc", path=str(sys.prefix) + "/bin")
    return [script] if script else [sys.executable, "-m", "cli"]


@dataclass
class ServiceSystem(System):
    """One namespace of the service with its own scheduler and dispatcher processes."""

    procs: Processes
    amqp_url: str
    redis_url: str
    dispatchers: int
    name: str
    env: dict[str, str] = field(default_factory=dict)
    fan_out_first: bool = True
    """Backlog runs: let the scheduler fan the whole backlog out before dispatchers start, so
    they drain a queue of one job per delivery, as the naive consumer, Celery and Dramatiq do.
    False measures scheduler and dispatchers draining together (end to end)."""
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    _ctx: Context | None = None
    _orgs: dict[str, str] = field(default_factory=dict)
    _ports: dict[str, int] = field(default_factory=dict)
    _started: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _sampler: RssSampler | None = None
    _backlog_jobs: int = 0

    def __post_init__(self) -> None:
        self.label = f"svc, {self.dispatchers} dispatcher" + ("s" if self.dispatchers > 1 else "")
        if not self.fan_out_first:
            self.label += ", end to end"
        self.env = {
            "SVC_NAMESPACE": f"bench{uuid.uuid4().hex[:10]}",
            "SVC_AMQP_URL": self.amqp_url,
            "SVC_REDIS_URL": self.redis_url,
            "SVC_ALLOW_PRIVATE_TARGETS": "true",
            "SVC_LOG_LEVEL": "WARNING",
            "SVC_HTTP_HOST": "127.0.0.1",
            "SVC_SHUTDOWN_GRACE": "2s",
            **self.env,
        }
        self.settings = Settings.from_env(self.env)

    async def open(self) -> None:
        self._ctx = await self._stack.enter_async_context(open_context(self.settings))

    @property
    def ctx(self) -> Context:
        assert self._ctx is not None, "open() the system first"
        return self._ctx

    async def _org_of(self, target: Target) -> str:
        """One organisation per target URL, with one endpoint subscribed to the event type."""
        org = self._orgs.get(target.url)
        if org is None:
            org = self._orgs[target.url] = f"org{len(self._orgs)}"
            await self.ctx.endpoints.create(Scope(org, "test"), target.url, [EVENT_TYPE])
        return org

    async def publish(self, targets: Sequence[Target], count: int, rate: float) -> dict[str, int]:
        orgs = [await self._org_of(t) for t in targets]
        ctx = self.ctx
        if rate > 0:
            made: list[Event | None] = [None] * count

            async def send(seq: int) -> None:
                event = made[seq] = payment_event(seq)
                await publish_event(ctx, event, orgs[seq % len(orgs)])

            await paced(count, rate, send)
            return {e.id: e.created_ms for e in made if e is not None}
        events = [payment_event(seq) for seq in range(count)]
        await self._store(events, orgs)

        async def preload(seq: int) -> None:
            event = events[seq]
            message = event_message(event, orgs[seq % len(orgs)])
            await ctx.exchange.publish(message, routing_key=event.type)

        await paced(count, 0, preload)
        self._backlog_jobs = count  # one endpoint per organisation: one job per event
        return {e.id: e.created_ms for e in events}

    async def _store(self, events: list[Event], orgs: list[str]) -> None:
        for start in range(0, len(events), 1000):
            async with self.ctx.redis.pipeline(transaction=False) as pipe:
                for seq in range(start, min(start + 1000, len(events))):
                    self.ctx.events.stage(pipe, events[seq], orgs[seq % len(orgs)], outbox=False)
                await pipe.execute()

    async def start(self) -> None:
        await self._start_roles(["scheduler"])
        if self.fan_out_first and self._backlog_jobs:
            await self._wait_for_jobs(self._backlog_jobs)
        self._backlog_jobs = 0
        await self._start_roles([f"dispatcher{i}" for i in range(self.dispatchers)])
        self._sampler = RssSampler([p.pid for r, p in self._started.items() if r != "scheduler"])
        self._sampler.start()

    async def _start_roles(self, roles: list[str]) -> None:
        started = []
        for role in roles:
            port = self._ports[role] = free_port()
            command = [*svc_command(), role.rstrip("0123456789")]
            env = {**self.env, "SVC_HTTP_PORT": str(port)}
            started.append(self.procs.start(f"{self.name}-{role}", command, env))
        for role, process in zip(roles, started, strict=True):
            await wait_ready(f"http://127.0.0.1:{self._ports[role]}/ready", process)
        self._started.update(zip(roles, started, strict=True))

    async def _wait_for_jobs(self, jobs: int, patience: float = 600) -> None:
        """Until the deliveries queue holds ``jobs`` messages: the fan-out is done."""
        channel = await self.ctx.connection.channel()
        try:
            queue = await channel.get_queue(self.ctx.topology.deliveries, ensure=False)
            async with asyncio.timeout(patience):
                while True:  # the broker has no event for "queue reached N": poll it
                    if ((await queue.declare()).message_count or 0) >= jobs:
                        return
                    await asyncio.sleep(0.1)
        finally:
            await channel.close()

    async def stop(self) -> None:
        if self._sampler is not None:
            await self._sampler.stop()
        for process in self._started.values():
            await self.procs.stop(process)
        self._started = {}

    async def close(self) -> None:
        await self.stop()
        await self._stack.aclose()
        await delete_namespace(self.settings)

    def cpu_groups(self) -> dict[str, list[int]]:
        return {
            "dispatcher": [p.pid for r, p in self._started.items() if r != "scheduler"],
            "scheduler": [p.pid for r, p in self._started.items() if r == "scheduler"],
        }

    def peak_rss_mb(self) -> float | None:
        return None if self._sampler is None else self._sampler.peak_mb

    def reset_rss(self) -> None:
        if self._sampler is not None:
            self._sampler.reset()

    async def counters(self) -> dict[str, float]:
        """Selected ``svc_`` counters summed over this system's processes."""
        totals: dict[str, float] = {}
        async with aiohttp.ClientSession() as session:
            for port in self._ports.values():
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                        _add_counters(totals, await response.text())
        return totals


def _add_counters(totals: dict[str, float], text: str) -> None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            short = _COUNTERS.get(sample.name)
            if short is None:
                continue
            outcome = sample.labels.get("outcome")
            key = f"{short}_{outcome}" if outcome else short
            totals[key] = totals.get(key, 0) + sample.value
