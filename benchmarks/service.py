"""The service under test: its dispatchers and, where a run needs them, scheduler and API."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from benchmarks.workload import EVENT_TYPE, System, Target, paced, payment_event
from harness.cleanup import delete_namespace
from harness.ports import free_port, wait_ready
from harness.processes import Processes, svc
from harness.sampling import RssSampler
from svc.amqp.delivery_jobs import DeliveryJob
from svc.context import Context, open_context
from svc.db.times import to_dt
from svc.envelope import Event
from svc.events.flow import publish_event
from svc.orgs import Scope
from svc.settings import Settings

COLUMNS = ("id", "org_id", "env", "type", "created_at", "body")


@dataclass(frozen=True, slots=True)
class Stores:
    """The broker, Redis, database and secret key every service process of a run uses."""

    amqp_url: str
    redis_url: str
    database_url: str
    secret_key: str = field(repr=False)


async def store_events(ctx: Context, events: Sequence[tuple[Event, str]], outbox: bool) -> None:
    """Store events with their organisations in one transaction; ``outbox``: as if unpublished."""
    async with ctx.unit() as unit:
        for start in range(0, len(events), 5_000):
            batch = events[start : start + 5_000]
            rows = [(e.id, o, e.environment, e.type, to_dt(e.created_ms), e.body) for e, o in batch]
            await unit.copy("events", COLUMNS, rows)
            if outbox:
                due = [(e.id, to_dt(e.created_ms)) for e, _ in batch]
                await unit.copy("outbox", ("event_id", "created_at"), due)


@dataclass
class ServiceSystem(System):
    """A namespace of the service, its processes and organisations; ``jobs``: backlogs as jobs."""

    procs: Processes
    stores: Stores
    dispatchers: int
    name: str
    env: dict[str, str] = field(default_factory=dict)
    scheduler: bool = True
    jobs: bool = False
    api: bool = False
    label: str = ""
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    _ctx: Context | None = None
    _orgs: dict[str, str] = field(default_factory=dict)
    _endpoints: dict[str, str] = field(default_factory=dict)
    _ports: dict[str, int] = field(default_factory=dict)  # ops ports: /ready, /metrics
    _api_port: int = 0
    _started: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _sampler: RssSampler | None = None

    def __post_init__(self) -> None:
        self.input = "delivery jobs" if self.jobs else "events"
        if not self.label:
            api = "1 api + 1 scheduler + " if self.api else ""
            plural = "s" if self.dispatchers > 1 else ""
            self.label = f"svc, {api}{self.dispatchers} dispatcher{plural}"
        self.env = {
            "SVC_NAMESPACE": f"bench{uuid.uuid4().hex[:10]}",
            "SVC_AMQP_URL": self.stores.amqp_url,
            "SVC_REDIS_URL": self.stores.redis_url,
            "SVC_DATABASE_URL": self.stores.database_url,
            "SVC_SECRET_KEY": self.stores.secret_key,
            "SVC_ALLOW_PRIVATE_TARGETS": "true",
            "SVC_LOG_LEVEL": "WARNING",
            "SVC_HTTP_HOST": "127.0.0.1",
            "SVC_SHUTDOWN_GRACE": "2s",
            "SVC_RATE_LIMIT_LIVE": "0",  # the payment runs set what they measure
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
        return f"http://127.0.0.1:{self._api_port}"

    async def organisation(self, name: str) -> str:
        """The id of this system's organisation ``name`` (made on first use)."""
        return await self.ctx.orgs.ensure(f"{self.name}-{self.settings.namespace}-{name}")

    async def subscribe(self, org: str, url: str, events: list[str], env: str = "test") -> str:
        """A webhook endpoint of ``org`` (in ``env``) at ``url``; returns its id."""
        endpoint = await self.ctx.endpoints.create(self.ctx.db, Scope(org, env), url, events)
        self._endpoints[url] = endpoint.id
        return endpoint.id

    async def publish(
        self, targets: Sequence[Target], count: int, rate: float, parents: Sequence[str] = ()
    ) -> dict[str, int]:
        """As ``System.publish``, one organisation per target; a backlog is stored, then sent as
        events (with ``parents`` as their traceparents) or as one delivery job per delivery."""
        for target in targets:
            if target.url not in self._orgs:
                org = await self.organisation(f"org{len(self._orgs)}")
                await self.subscribe(org, target.url, [EVENT_TYPE])
                self._orgs[target.url] = org
        if rate > 0:
            created: dict[str, int] = {}

            async def publish(seq: int) -> None:
                event = payment_event(seq)
                created[event.id] = event.created_ms
                await publish_event(self.ctx, event, self._orgs[targets[seq % len(targets)].url])

            await paced(count, rate, publish)
            return created
        backlog = [(payment_event(seq), targets[seq % len(targets)].url) for seq in range(count)]
        await store_events(self.ctx, [(e, self._orgs[url]) for e, url in backlog], outbox=False)

        async def send(seq: int) -> None:
            event, url = backlog[seq]
            if self.jobs:
                job = DeliveryJob.of(event, self._orgs[url], self._endpoints[url])
                await self.ctx.broker.job(job, self.ctx.topology.deliveries)
            else:
                parent = parents[seq] if parents else None
                await self.ctx.broker.event(event, self._orgs[url], parent)

        await paced(count, 0, send)
        return {event.id: event.created_ms for event, _ in backlog}

    async def spawn(self, *roles: str) -> None:
        """Start the system's processes, or only ``roles`` (``scheduler``, ``dispatcher0``…)."""
        every = not roles
        if every:
            roles = (*(["api"] if self.api else []), *(["scheduler"] if self.scheduler else []))
            roles += tuple(f"dispatcher{i}" for i in range(self.dispatchers))
        for role in roles:
            port = self._ports[role] = free_port()
            env = {**self.env, "SVC_OPS_PORT": str(port)}
            if _role(role) == "api":
                self._api_port = free_port()
                env["SVC_HTTP_PORT"] = str(self._api_port)
            self._started[role] = self.procs.start(f"{self.name}-{role}", svc(_role(role)), env)
        if every:
            self._sampler = RssSampler(self._pids("dispatcher"))
            self._sampler.start()

    async def ready(self) -> None:
        for role, process in self._started.items():
            await wait_ready(f"http://127.0.0.1:{self._ports[role]}/ready", process)

    def _pids(self, role: str) -> list[int]:
        return [p.pid for r, p in self._started.items() if _role(r) == role]

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
        return {role: self._pids(role) for role in map(_role, self._started)}

    def peak_rss_mb(self) -> float | None:
        return self._sampler.peak_mb if self._sampler else None

    def reset_rss(self) -> None:
        if self._sampler is not None:
            self._sampler.reset()

    def metrics_urls(self) -> dict[str, str]:
        """The ``/metrics`` of each running process, by its name (``api``, ``dispatcher0``…)."""
        return {role: f"http://127.0.0.1:{self._ports[role]}/metrics" for role in self._started}


def _role(name: str) -> str:
    """The ``svc`` command of a started process's name (``dispatcher1`` → ``dispatcher``)."""
    return name.rstrip("0123456789")
