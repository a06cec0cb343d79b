"""The real service under test: N ``svc dispatcher`` processes and, where a run needs them,
``svc scheduler`` and ``svc api``, all on the run's own PostgreSQL database.

Dispatchers consume the events (fan-out) queue themselves and deliver each event to its
subscribers in-process; the deliveries queue carries only retries, resends, test sends,
deferrals and hand-offs. The scheduler is off the delivery path, so delivery runs start none.

Events go in the way any producer of ours sends them: stored in PostgreSQL, published to the
events exchange with a broker confirm (header ``svc-stored``). A backlog is stored first (many
transactions at once) and then published with many confirms in flight on one channel: as
events, or, for the like-for-like drain, as one delivery job per delivery on the deliveries
queue. A paced run uses ``publish_event`` (store with an outbox row, publish, clear the row)
as the API does. The outbox run stores events whose publish was "lost": outbox rows older
than ``SVC_OUTBOX_SWEEP_AGE``, for a scheduler's sweep to publish.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.workload import EVENT_TYPE, System, Target, aged, chunks, paced, payment_event
from harness.cleanup import delete_namespace
from harness.ports import free_port, wait_ready
from harness.processes import Processes
from harness.sampling import RssSampler
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.messages import event_message
from svc.context import Context, open_context
from svc.db.times import to_dt
from svc.envelope import Event
from svc.events.emit import publish_event
from svc.orgs import Scope
from svc.settings import Settings

_COUNTERS = {
    "svc_deliveries_total": "deliveries",
    "svc_deliveries_deferred_total": "deferred",
    "svc_retries_scheduled_total": "retries_scheduled",
    "svc_deliveries_exhausted_total": "exhausted",
    "svc_jobs_created_total": "jobs_created",
    "svc_deliveries_handed_off_total": "handed_off",
    "svc_outbox_republished_total": "outbox_republished",
}
IN_FLIGHT = "svc_deliveries_in_flight"
STORE_BATCH = 500
STORE_UNITS = 4
"""Preload: events per transaction, and transactions at once (below the pool size)."""


def svc_command() -> list[str]:
    """``svc`` from the running virtualenv, else the module."""
    script = shutil.which("svc", path=str(sys.prefix) + "/bin")
    return [script] if script else [sys.executable, "-m", "cli"]


@dataclass(frozen=True, slots=True)
class Stores:
    """Where every service process of a run keeps its data: broker, Redis, the run's database
    and the key that encrypts signing secrets in it."""

    amqp_url: str
    redis_url: str
    database_url: str
    secret_key: str = field(repr=False)

    def env(self) -> dict[str, str]:
        return {
            "SVC_AMQP_URL": self.amqp_url,
            "SVC_REDIS_URL": self.redis_url,
            "SVC_DATABASE_URL": self.database_url,
            "SVC_SECRET_KEY": self.secret_key,
        }


@dataclass
class ServiceSystem(System):
    """One namespace of the service with its own processes; organisations of the run's
    database named after the system, so systems sharing the database never see each other's
    endpoints."""

    procs: Processes
    stores: Stores
    dispatchers: int
    name: str
    env: dict[str, str] = field(default_factory=dict)
    scheduler: bool = True
    """Run one ``svc scheduler`` too. Delivery runs do not: it is off the delivery path."""
    jobs: bool = False
    """A backlog (``publish`` with rate 0) goes in as one ``DeliveryJob`` per delivery on the
    deliveries queue, the shape of backlog the naive consumer, Celery and Dramatiq drain;
    else as events on the events exchange, which dispatchers fan out themselves."""
    api: bool = False
    """Also run one ``svc api`` process (the payment run)."""
    label: str = ""
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    _ctx: Context | None = None
    _orgs: dict[str, str] = field(default_factory=dict)
    _endpoints: dict[str, str] = field(default_factory=dict)
    _ports: dict[str, int] = field(default_factory=dict)
    """Each process's ops port (``/ready``, ``/metrics``); the API's public one is ``_api_port``."""
    _api_port: int = 0
    _started: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _sampler: RssSampler | None = None
    _backlog: list[tuple[Event, str, Target]] = field(default_factory=list)
    uses_database = True

    def __post_init__(self) -> None:
        self.input = "delivery jobs" if self.jobs else "events"
        plural = "s" if self.dispatchers > 1 else ""
        if not self.label:
            self.label = f"svc, {self.dispatchers} dispatcher{plural}"
            if self.api:
                self.label = f"svc, 1 api + 1 scheduler + {self.dispatchers} dispatcher{plural}"
        self.env = {
            "SVC_NAMESPACE": f"bench{uuid.uuid4().hex[:10]}",
            **self.stores.env(),
            "SVC_ALLOW_PRIVATE_TARGETS": "true",
            "SVC_LOG_LEVEL": "WARNING",
            "SVC_HTTP_HOST": "127.0.0.1",
            "SVC_SHUTDOWN_GRACE": "2s",
            "SVC_RATE_LIMIT_LIVE": "0",  # the payment run sets what it measures
            "SVC_RATE_LIMIT_TEST": "0",
            "SVC_MAX_STREAMS_PER_KEY": "0",  # the long-poll run holds 5,000 streams of one key
            **self.env,
        }
        self.settings = Settings.from_env(self.env)

    async def open(self) -> None:
        self._ctx = await self._stack.enter_async_context(open_context(self.settings))

    @property
    def ctx(self) -> Context:
        assert self._ctx is not None, "open() the system first"
        return self._ctx

    @property
    def api_url(self) -> str:
        """Base URL of the running ``svc api`` process."""
        return f"http://127.0.0.1:{self._api_port}"

    async def organisation(self, name: str) -> str:
        """The id of this system's organisation ``name`` (made on first use). The name holds
        the system's namespace too: a system run again in a later round of the same database
        must not find the endpoints of its earlier run subscribed to its events."""
        return await self.ctx.orgs.ensure(f"{self.name}-{self.settings.namespace}-{name}")

    async def subscribe(self, org: str, url: str, events: list[str]) -> str:
        """A webhook endpoint of ``org`` (test environment) at ``url``; returns its id."""
        endpoint = await self.ctx.endpoints.create(self.ctx.db, Scope(org, "test"), url, events)
        self._endpoints[url] = endpoint.id
        return endpoint.id

    async def _org_of(self, target: Target) -> str:
        """One organisation per target URL, with one endpoint subscribed to the event type."""
        org = self._orgs.get(target.url)
        if org is None:
            org = self._orgs[target.url] = await self.organisation(f"org{len(self._orgs)}")
            await self.subscribe(org, target.url, [EVENT_TYPE])
        return org

    async def publish(self, targets: Sequence[Target], count: int, rate: float) -> dict[str, int]:
        if rate <= 0:
            created = await self.store_backlog(targets, count)
            await self.send_backlog()
            return created
        orgs = [await self._org_of(t) for t in targets]
        ctx = self.ctx
        made: list[Event | None] = [None] * count

        async def send(seq: int) -> None:
            event = made[seq] = payment_event(seq)
            await publish_event(ctx, event, orgs[seq % len(orgs)])

        await paced(count, rate, send)
        return {e.id: e.created_ms for e in made if e is not None}

    async def store_backlog(self, targets: Sequence[Target], count: int) -> dict[str, int]:
        """Store ``count`` events round-robin over ``targets`` (no outbox rows) for
        ``send_backlog``; returns each event id's creation time, in order."""
        orgs = [await self._org_of(t) for t in targets]
        events = [payment_event(seq) for seq in range(count)]
        await self._store(events, orgs)
        self._backlog = [
            (event, orgs[seq % len(orgs)], targets[seq % len(targets)])
            for seq, event in enumerate(events)
        ]
        return {e.id: e.created_ms for e in events}

    async def send_backlog(self) -> float:
        """Publish the stored backlog with confirms, many in flight on one channel: one
        delivery job each on the deliveries queue (``jobs``), else the events on the events
        exchange. Returns when the first publish started, in unix milliseconds."""
        ctx, backlog = self.ctx, self._backlog
        self._backlog = []
        if self.jobs:
            jobs = ctx.channel.default_exchange
            endpoints = [self._endpoints[target.url] for _, _, target in backlog]

            async def send(seq: int) -> None:
                event, org, _ = backlog[seq]
                job = DeliveryJob.of(event, org, endpoints[seq])
                await jobs.publish(job.to_message(), routing_key=ctx.topology.deliveries)

        else:

            async def send(seq: int) -> None:
                event, org, _ = backlog[seq]
                await ctx.exchange.publish(event_message(event, org), routing_key=event.type)

        started_ms = time.time() * 1000
        await paced(len(backlog), 0, send)
        return started_ms

    async def store_stragglers(self, org: str, count: int, age: float) -> None:
        """``count`` events of ``org`` with outbox rows ``age`` seconds old, as if their
        publishes were lost, committed at once (a sweep sees all or none of them)."""
        events = [aged(payment_event(seq), age) for seq in range(count)]
        async with self.ctx.unit() as unit:
            for part in chunks(range(count), 5_000):
                batch = [events[seq] for seq in part]
                await unit.copy(
                    "events",
                    ("id", "org_id", "env", "type", "created_at", "body"),
                    [
                        (e.id, org, e.environment, e.type, to_dt(e.created_ms), e.body)
                        for e in batch
                    ],
                )
                await unit.copy(
                    "outbox",
                    ("event_id", "created_at"),
                    [(e.id, to_dt(e.created_ms)) for e in batch],
                )

    async def _store(self, events: list[Event], orgs: list[str]) -> None:
        """Store a backlog without outbox rows: the preload publishes it right after."""
        gate = asyncio.Semaphore(STORE_UNITS)

        async def store(seqs: Sequence[int]) -> None:
            async with gate, self.ctx.unit() as unit:
                for seq in seqs:
                    await self.ctx.events.insert(
                        unit, events[seq], orgs[seq % len(orgs)], outbox=False
                    )

        await asyncio.gather(*(store(s) for s in chunks(range(len(events)), STORE_BATCH)))

    async def attempts_logged(self, targets: Sequence[Target], successes: int) -> int | None:
        """Successful attempts in the delivery log for ``targets`` once it holds ``successes``
        (the log is written in batches after the receipt), else after 5 s."""
        ids = [self._endpoints[t.url] for t in targets if t.url in self._endpoints]
        deadline = time.monotonic() + 5
        while True:
            logged = int(
                await self.ctx.db.fetchval(
                    "SELECT count(*) FROM delivery_attempts "
                    "WHERE endpoint_id = ANY($1::text[]) AND outcome = 'success'",
                    ids,
                )
            )
            if logged >= successes or time.monotonic() > deadline:
                return logged
            await asyncio.sleep(0.1)

    async def start(self) -> None:
        await self.spawn()
        await self.ready()

    async def spawn(self) -> None:
        roles = [*(["api"] if self.api else []), *(["scheduler"] if self.scheduler else [])]
        self._spawn_roles([*roles, *(f"dispatcher{i}" for i in range(self.dispatchers))])
        self._sampler = RssSampler(self._pids("dispatcher"))
        self._sampler.start()

    async def add_roles(self, *roles: str) -> None:
        """Start more processes (``scheduler``, ``dispatcher<n>``) beside those running, and
        wait until they are ready."""
        self._spawn_roles(list(roles))
        for role in roles:
            await wait_ready(f"http://127.0.0.1:{self._ports[role]}/ready", self._started[role])

    async def ready(self) -> None:
        for role, process in self._started.items():
            await wait_ready(f"http://127.0.0.1:{self._ports[role]}/ready", process)

    def roles(self) -> dict[str, int]:
        """How many processes of each role run (a role that does not run is absent)."""
        counts: dict[str, int] = {}
        for role in self._started:
            counts[_role(role)] = counts.get(_role(role), 0) + 1
        return counts

    def _pids(self, role: str) -> list[int]:
        return [p.pid for r, p in self._started.items() if _role(r) == role]

    def _spawn_roles(self, roles: list[str]) -> None:
        for role in roles:
            port = self._ports[role] = free_port()
            command = [*svc_command(), _role(role)]
            env = {**self.env, "SVC_OPS_PORT": str(port)}
            if _role(role) == "api":
                self._api_port = free_port()
                env["SVC_HTTP_PORT"] = str(self._api_port)
            self._started[role] = self.procs.start(f"{self.name}-{role}", command, env)

    async def queued(self, queue: str) -> int:
        """Messages ready in one of this namespace's queues (``fanout``, ``deliveries``…)."""
        channel = await self.ctx.connection.channel()
        try:
            name = getattr(self.ctx.topology, queue)
            declared = await channel.declare_queue(name, passive=True)
            return declared.declaration_result.message_count or 0
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
        """Process ids of each role that runs."""
        return {role: self._pids(role) for role in self.roles()}

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

    def metrics_urls(self) -> dict[str, str]:
        """The ``/metrics`` of each running process, by its name (``api``, ``dispatcher0``…)."""
        return {role: f"http://127.0.0.1:{self._ports[role]}/metrics" for role in self._started}

    async def in_flight(self, session: aiohttp.ClientSession) -> float:
        """Deliveries being sent right now, summed over the dispatchers (their gauge)."""
        total = 0.0
        for role, port in self._ports.items():
            if _role(role) != "dispatcher" or role not in self._started:
                continue
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                    for family in text_string_to_metric_families(await response.text()):
                        total += sum(s.value for s in family.samples if s.name == IN_FLIGHT)
        return total


def _add_counters(totals: dict[str, float], text: str) -> None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            short = _COUNTERS.get(sample.name)
            if short is None:
                continue
            outcome = sample.labels.get("outcome")
            key = f"{short}_{outcome}" if outcome else short
            totals[key] = totals.get(key, 0) + sample.value


def _role(name: str) -> str:
    """The ``svc`` command of a started process's name (``dispatcher1`` → ``dispatcher``)."""
    return name.rstrip("0123456789")
