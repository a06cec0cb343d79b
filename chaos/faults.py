"""The faults, injected one at a time: what breaks, for how long, and how it ends."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp
from redis.asyncio import Redis

from harness.ports import cancel, wait_refused, wait_until
from harness.processes import ROLES, Pods
from harness.receivers import Receiver
from harness.servers.postgres import PostgresPair, PrivatePostgres
from harness.servers.proxy import TcpProxy
from harness.servers.rabbitmq import PrivateRabbitCluster, PrivateRabbitMQ
from harness.servers.redis import PrivateRedis

log = logging.getLogger(__name__)

PLAIN = "plain"
CLUSTER = "cluster"
STANDBY = "standby"
PROXIED = "proxied"
"""The servers of a world: one of each; RabbitMQ as a three-node cluster with quorum queues;
PostgreSQL as a primary with a synchronous standby; or PostgreSQL and RabbitMQ each reached
through a ``TcpProxy`` that can slow and cut the link."""
POSTGRESQL = "postgresql"
RABBITMQ = "rabbitmq"
SLOW_LINK_DELAY = 0.2
"""Seconds a slow link adds to every chunk it passes, each way."""
EVERY = 0.5
"""Seconds between two looks at the roles during a fault."""
ANSWER_WITHIN = 1.0
"""Seconds within which 99 % of payment creations must be answered during a memory alarm."""
UNBLOCKED_WITHIN = 10.0
"""Seconds after the alarm's lift within which the api must no longer report the block."""


class Receivers:
    """The healthy receivers and the one whose endpoint of each scenario is down for a while."""

    def __init__(self, healthy: int) -> None:
        self.healthy = [Receiver(f"r{i + 1}") for i in range(healthy)]
        self.flaky = Receiver("flaky")
        self.all = [*self.healthy, self.flaky]

    async def start(self) -> None:
        await asyncio.gather(*(receiver.start() for receiver in self.all))

    async def stop(self) -> None:
        await asyncio.gather(*(receiver.stop() for receiver in self.all))


@dataclass
class World:
    """Everything a fault can break."""

    pods: Pods
    rabbitmq: PrivateRabbitMQ
    """The broker node (on a cluster, its first node)."""
    postgres: PrivatePostgres
    redis: PrivateRedis
    receivers: Receivers
    cluster: PrivateRabbitCluster | None = None
    stops: list[tuple[float, float]] = field(default_factory=list)
    """Each broker node the fault stopped: when it was told to stop and when it was gone."""
    pair: PostgresPair | None = None
    """``STANDBY``: the primary (also ``postgres``) and its standby."""
    proxies: dict[str, TcpProxy] = field(default_factory=dict)
    """``PROXIED``: the proxy in front of ``POSTGRESQL`` and the one in front of ``RABBITMQ``."""
    checks: dict[str, bool] = field(default_factory=dict)
    """The fault's own requirements and whether they held: one that did not fails it."""


Action = Callable[[World], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Fault:
    """``inject``, wait ``down`` seconds, ``heal``; a fault without ``heal`` is instantaneous.
    With ``answer_within``, 99 % of the payments first sent during the fault must be answered
    201 within that many seconds of their first try, and none may get a 5xx answer."""

    name: str
    title: str
    down: float
    inject: Action
    heal: Action | None = None
    setup: str = PLAIN
    answer_within: float | None = None


async def _kill(role: str, world: World) -> None:
    world.pods.kill(role)


async def _stop_node(world: World, node: PrivateRabbitMQ) -> None:
    asked = time.monotonic()
    await node.stop()  # the whole node; the others go on as the cluster
    world.stops.append((asked, time.monotonic()))


async def _stop_busiest(world: World) -> None:
    """Stop the whole node most of the roles' connections go to."""
    assert world.cluster is not None
    node = await world.cluster.busiest()
    log.info("stopping RabbitMQ node %s (port %d)", node.node, node.port)
    await _stop_node(world, node)


async def _start_stopped(world: World) -> None:
    assert world.cluster is not None
    for node in world.cluster.nodes:
        if node.process is None:  # stopped
            await world.cluster.start_node(node)


async def _rolling_restart(world: World) -> None:
    """Each node in turn stopped, and started before the next one stops."""
    assert world.cluster is not None
    for node in world.cluster.nodes:
        log.info("restarting RabbitMQ node %s (port %d)", node.node, node.port)
        await _stop_node(world, node)
        await world.cluster.start_node(node)


def _failover() -> tuple[Action, Action]:
    """SIGKILL of every process of the primary, then ``pg_ctl promote`` of the standby; every
    role's ``/ready`` must answer 503 in between, asked every ``EVERY`` seconds."""
    statuses: dict[str, set[str]] = {}
    polling: list[asyncio.Task[None]] = []

    async def poll(pods: Pods) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while True:
                answers = await asyncio.gather(*(pods.ready(session, role) for role in ROLES))
                for role, answer in zip(ROLES, answers, strict=True):
                    statuses[role].add(answer)
                await asyncio.sleep(EVERY)

    async def kill(world: World) -> None:
        primary = world.postgres
        log.info("SIGKILL of the PostgreSQL primary (port %d)", primary.port)
        await asyncio.to_thread(primary.kill)
        await wait_refused(primary.port, 10)
        statuses.update({role: set() for role in ROLES})
        polling.append(asyncio.create_task(poll(world.pods)))

    async def promote(world: World) -> None:
        assert world.pair is not None
        await cancel(*polling)
        polling.clear()
        log.info("promoting the standby (port %d)", world.pair.standby.port)
        await asyncio.to_thread(world.pair.standby.promote)
        world.checks["ready_503_while_no_primary"] = all(s == {"503"} for s in statuses.values())

    return kill, promote


def _slow_link(name: str, server: str, link: str, seconds: float) -> Fault:
    """``SLOW_LINK_DELAY`` added to every chunk the link passes; to heal, every connection cut."""

    async def slow(world: World) -> None:
        log.info("%s link: %.0f ms added to every chunk", link, SLOW_LINK_DELAY * 1000)
        world.proxies[link].slow(SLOW_LINK_DELAY)

    async def cut(world: World) -> None:
        proxy = world.proxies[link]
        proxy.slow(0)
        log.info("%s link: %d connections cut", link, await proxy.cut())

    title = f"{server} link +{SLOW_LINK_DELAY * 1000:.0f} ms per packet, then cut"
    return Fault(name, title, seconds, slow, cut, setup=PROXIED)


async def _redis_flushall(world: World) -> None:
    async with Redis.from_url(world.redis.url) as client:
        await client.flushall()


async def _json(session: aiohttp.ClientSession, url: str) -> tuple[str, dict[str, Any]]:
    try:
        async with session.get(url) as answer:
            return str(answer.status), await answer.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return "unanswered", {}


async def _blocked(session: aiohttp.ClientSession, url: str) -> float | None:
    """The role's ``svc_amqp_blocked`` gauge (None when it does not answer)."""
    try:
        async with session.get(f"{url}/metrics") as answer:
            text = await answer.text()
    except (aiohttp.ClientError, TimeoutError):
        return None
    lines = (line.split() for line in text.splitlines())
    return next((float(words[1]) for words in lines if words[:1] == ["svc_amqp_blocked"]), None)


async def _unblocked(session: aiohttp.ClientSession, api: str) -> bool:
    """Whether the api's ``/ready`` and ``svc_amqp_blocked`` report no block."""
    status, body = await _json(session, f"{api}/ready")
    ready = status == "200" and body.get("warnings") == {"rabbitmq_blocked": False}
    return ready and await _blocked(session, api) == 0.0


class MemoryAlarm:
    """``raise_alarm`` sets the node's memory high watermark to 1 byte, so RabbitMQ blocks every
    publisher; ``lift`` sets it back to 40 % and records in ``World.checks`` whether meanwhile
    the api stayed ready and reported the block, and stopped reporting it after the lift."""

    def __init__(self) -> None:
        self._watching: asyncio.Task[None] | None = None
        self._ready: set[str] = set()  # the api's /ready statuses during the alarm
        self._reported = False  # /ready warned of the block
        self._gauged = False  # svc_amqp_blocked was 1

    async def raise_alarm(self, world: World) -> None:
        await world.rabbitmq.ctl("set_vm_memory_high_watermark", "absolute", "1")
        log.info("RabbitMQ memory alarm raised")
        self._watching = asyncio.create_task(self._watch(world.pods["api"].ops_url))

    async def lift(self, world: World) -> None:
        if self._watching is not None:
            await cancel(self._watching)
        await world.rabbitmq.ctl("set_vm_memory_high_watermark", "0.4")
        log.info("RabbitMQ memory alarm lifted")
        api = world.pods["api"].ops_url
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            unblocked = await wait_until(lambda: _unblocked(session, api), UNBLOCKED_WITHIN, 0.2)
        self._record(world, unblocked)

    async def _watch(self, api: str) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while True:
                status, body = await _json(session, f"{api}/ready")
                self._ready.add(status)
                self._reported |= bool((body.get("warnings") or {}).get("rabbitmq_blocked"))
                self._gauged |= await _blocked(session, api) == 1.0
                await asyncio.sleep(EVERY)

    def _record(self, world: World, unblocked: bool) -> None:
        world.checks["api_ready_while_blocked"] = self._ready == {"200"}
        world.checks["api_reported_blocked"] = self._reported and self._gauged
        world.checks["unblocked_after_alarm"] = unblocked


def catalogue(
    outage: float = 15.0, redis_outage: float = 10.0, node_outage: float = 30.0
) -> list[Fault]:
    """Every fault of the suite, in the order they run; outages last the given seconds."""
    alarm = MemoryAlarm()
    return [
        Fault("baseline", "no fault", 0, lambda _: asyncio.sleep(0)),  # the control
        *(Fault(f"{r}-kill", f"SIGKILL of the {r}", 0, partial(_kill, r)) for r in ROLES),
        Fault(
            "rabbitmq-restart",
            "RabbitMQ stopped",
            outage,
            lambda w: w.rabbitmq.stop_app(),
            lambda w: w.rabbitmq.start_app(),
        ),
        Fault(
            "rabbitmq-flow-control",
            "RabbitMQ memory alarm, publishers blocked",
            20.0,
            alarm.raise_alarm,
            alarm.lift,
            answer_within=ANSWER_WITHIN,
        ),
        Fault(
            "postgres-restart",
            "PostgreSQL stopped",
            outage,
            lambda w: asyncio.to_thread(w.postgres.stop),
            lambda w: asyncio.to_thread(w.postgres.start),
        ),
        Fault(
            "redis-restart",
            "Redis stopped",
            redis_outage,
            lambda w: w.redis.stop(),
            lambda w: w.redis.start(),
        ),
        Fault("redis-flushall", "Redis FLUSHALL", 0, _redis_flushall),
        Fault(
            "receivers-down",
            "every receiver down",
            outage,
            lambda w: w.receivers.stop(),
            lambda w: w.receivers.start(),
        ),
        Fault(
            "rabbitmq-node-loss",
            "the roles' RabbitMQ node of three stopped",
            node_outage,
            _stop_busiest,
            _start_stopped,
            setup=CLUSTER,
        ),
        Fault(
            "rabbitmq-rolling-restart",
            "each RabbitMQ node of three restarted in turn",
            0,
            _rolling_restart,
            setup=CLUSTER,
        ),
        _slow_link("postgres-slow", "PostgreSQL", POSTGRESQL, 30.0),
        _slow_link("rabbitmq-slow", "RabbitMQ", RABBITMQ, 30.0),
        Fault(
            "postgres-failover",
            "SIGKILL of the PostgreSQL primary, standby promoted",
            5.0,
            *_failover(),
            setup=STANDBY,
        ),
    ]
