"""The faults, injected one at a time: what breaks, for how long, and how it ends."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from redis.asyncio import Redis

from chaos.alarms import MemoryAlarm
from harness.ports import wait_refused
from harness.processes import ROLES, Pods
from harness.receivers import Receiver
from harness.servers.postgres import PostgresPair, PrivatePostgres
from harness.servers.proxy import TcpProxy
from harness.servers.rabbitmq import PrivateRabbitCluster, PrivateRabbitMQ
from harness.servers.redis import PrivateRedis

log = logging.getLogger(__name__)

NODE = "node"
CLUSTER = "cluster"
"""What the roles run on: one RabbitMQ node, or a three-node cluster (``SVC_AMQP_URL`` names
every node, ``SVC_QUEUE_TYPE=quorum``)."""

PLAIN = "plain"
STANDBY = "standby"
PROXIED = "proxied"
"""How the roles reach their servers: directly (one PostgreSQL); PostgreSQL as a primary with a
synchronous standby, ``SVC_DATABASE_URL`` naming both hosts with
``target_session_attrs=read-write``; or PostgreSQL and RabbitMQ each through a ``TcpProxy`` of
the suite that can slow down and cut the link."""
POSTGRESQL = "postgresql"
RABBITMQ = "rabbitmq"
SLOW_LINK_DELAY = 0.2
"""Seconds a slow link adds to every chunk it passes, each way."""


class Receivers:
    """The healthy receivers and the one whose endpoint of each scenario is down for a while."""

    def __init__(self, healthy: int) -> None:
        self.healthy = [Receiver(f"r{i + 1}") for i in range(healthy)]
        self.flaky = Receiver("flaky")

    @property
    def all(self) -> list[Receiver]:
        return [*self.healthy, self.flaky]

    async def start(self) -> None:
        for receiver in self.all:
            await receiver.start()

    async def stop(self) -> None:
        for receiver in self.all:
            await receiver.stop()


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
    """Each time the fault took a broker node away: when it was told to stop and when it was
    gone (monotonic); deliveries must flow again soon after each."""
    pair: PostgresPair | None = None
    """``STANDBY``: the primary (also ``postgres``) and its standby."""
    proxies: dict[str, TcpProxy] = field(default_factory=dict)
    """``PROXIED``: the proxy in front of ``POSTGRESQL`` and the one in front of ``RABBITMQ``."""
    notes: dict[str, Any] = field(default_factory=dict)
    """What the fault saw, for the results file (cleared before each scenario)."""
    checks: dict[str, bool] = field(default_factory=dict)
    """The fault's own requirements and whether they held; a scenario with one that did not
    fails (cleared before each scenario)."""


Action = Callable[[World], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Fault:
    """``inject``, wait ``down`` seconds, ``heal``; a fault without ``heal`` is instantaneous
    (what recovers from it is the service itself, or the Deployment restarting a pod)."""

    name: str
    title: str
    down: float
    inject: Action
    heal: Action | None = None
    broker: str = NODE
    """What the roles run on in this scenario (``NODE`` or ``CLUSTER``)."""
    setup: str = PLAIN
    """How the roles reach PostgreSQL and RabbitMQ (``PLAIN``, ``STANDBY`` or ``PROXIED``)."""


async def _nothing(world: World) -> None:
    """The control: the same load and the same flaky endpoint, nothing broken."""


def _kill(role: str) -> Action:
    async def kill(world: World) -> None:
        world.pods.kill(role)

    return kill


ALARM_DOWN = 20.0
"""Seconds the memory alarm of ``rabbitmq-flow-control`` lasts."""
_alarm = MemoryAlarm()


def _cluster(world: World) -> PrivateRabbitCluster:
    if world.cluster is None:
        raise RuntimeError("this fault needs the roles on a RabbitMQ cluster")
    return world.cluster


async def _stop_node(world: World, node: PrivateRabbitMQ) -> None:
    asked = time.monotonic()
    await node.stop()  # the whole node; the others go on as the cluster
    world.stops.append((asked, time.monotonic()))


def _node_loss() -> tuple[Action, Action]:
    """Stop the node most of the roles' connections go to (the whole node: its Erlang VM
    exits); start it again, and wait until it is back in the cluster, to heal."""
    stopped: list[PrivateRabbitMQ] = []

    async def stop(world: World) -> None:
        node = await _cluster(world).busiest()
        log.info("stopping RabbitMQ node %s (port %d)", node.node, node.port)
        stopped.append(node)
        await _stop_node(world, node)

    async def start(world: World) -> None:
        while stopped:
            await _cluster(world).start_node(stopped.pop())

    return stop, start


async def _rolling_restart(world: World) -> None:
    """Each node in turn: stopped, started, and back in the cluster with every quorum queue's
    member online before the next one stops."""
    cluster = _cluster(world)
    for node in cluster.nodes:
        log.info("restarting RabbitMQ node %s (port %d)", node.node, node.port)
        await _stop_node(world, node)
        await cluster.start_node(node)


def _pair(world: World) -> PostgresPair:
    if world.pair is None:
        raise RuntimeError("this fault needs PostgreSQL as a primary and a standby")
    return world.pair


async def _ready_statuses(
    pods: Pods, statuses: dict[str, Counter[str]], stop: asyncio.Event
) -> None:
    """Ask every role's ``/ready`` every 0.5 s until ``stop``; count the answers by status
    (``unanswered``: no answer within 2 s)."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while not stop.is_set():
            answers = await asyncio.gather(*(pods.ready(session, role) for role in ROLES))
            for role, answer in zip(ROLES, answers, strict=True):
                statuses[role][answer] += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)


def _failover() -> tuple[Action, Action]:
    """SIGKILL of the primary (every process of it: its machine died), then, the fault's
    down time later, ``pg_ctl promote`` of the standby; the old primary stays down. In
    between nothing takes writes, and every role's ``/ready`` must answer 503."""
    statuses: dict[str, Counter[str]] = {}
    stop = asyncio.Event()
    polling: list[asyncio.Task[None]] = []

    async def kill(world: World) -> None:
        pair = _pair(world)
        log.info("SIGKILL of the PostgreSQL primary (port %d)", pair.primary.port)
        await asyncio.to_thread(pair.primary.kill)
        await wait_refused(pair.primary.port, 10)
        statuses.clear()
        statuses.update({role: Counter() for role in ROLES})
        stop.clear()
        polling.append(asyncio.create_task(_ready_statuses(world.pods, statuses, stop)))

    async def promote(world: World) -> None:
        pair = _pair(world)
        stop.set()
        while polling:
            await polling.pop()
        log.info("promoting the standby (port %d)", pair.standby.port)
        await asyncio.to_thread(pair.standby.promote)
        world.notes["ready_while_no_primary"] = {r: dict(c) for r, c in statuses.items()}
        world.checks["ready_503_while_no_primary"] = all(
            set(counts) == {"503"} for counts in statuses.values()
        )

    return kill, promote


def _slow_link(link: str, delay: float) -> Action:
    async def slow(world: World) -> None:
        log.info("%s link: %.0f ms added to every chunk", link, delay * 1000)
        world.proxies[link].slow(delay)

    return slow


def _cut_link(link: str) -> Action:
    async def cut(world: World) -> None:
        proxy = world.proxies[link]
        proxy.slow(0)
        world.notes["connections_cut"] = await proxy.cut()
        log.info("%s link: %d connections cut", link, world.notes["connections_cut"])

    return cut


async def _redis_flushall(world: World) -> None:
    client = Redis.from_url(world.redis.url)
    try:
        await client.flushall()
    finally:
        await client.aclose()


def catalogue(
    outage: float = 15.0,
    redis_outage: float = 10.0,
    node_outage: float = 30.0,
    slow: float = 30.0,
    failover_gap: float = 5.0,
) -> list[Fault]:
    """Every fault of the suite, in the order they run; outages last the given seconds."""
    node_stop, node_start = _node_loss()
    primary_kill, promote = _failover()
    return [
        Fault("baseline", "no fault", 0, _nothing),
        Fault("api-kill", "SIGKILL of the api", 0, _kill("api")),
        Fault("scheduler-kill", "SIGKILL of the scheduler", 0, _kill("scheduler")),
        Fault("dispatcher-kill", "SIGKILL of the dispatcher", 0, _kill("dispatcher")),
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
            ALARM_DOWN,
            _alarm.raise_alarm,
            _alarm.lift,
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
            node_stop,
            node_start,
            broker=CLUSTER,
        ),
        Fault(
            "rabbitmq-rolling-restart",
            "each RabbitMQ node of three restarted in turn",
            0,
            _rolling_restart,
            broker=CLUSTER,
        ),
        Fault(
            "postgres-slow",
            f"PostgreSQL link +{SLOW_LINK_DELAY * 1000:.0f} ms per packet, then cut",
            slow,
            _slow_link(POSTGRESQL, SLOW_LINK_DELAY),
            _cut_link(POSTGRESQL),
            setup=PROXIED,
        ),
        Fault(
            "rabbitmq-slow",
            f"RabbitMQ link +{SLOW_LINK_DELAY * 1000:.0f} ms per packet, then cut",
            slow,
            _slow_link(RABBITMQ, SLOW_LINK_DELAY),
            _cut_link(RABBITMQ),
            setup=PROXIED,
        ),
        Fault(
            "postgres-failover",
            "SIGKILL of the PostgreSQL primary, standby promoted",
            failover_gap,
            primary_kill,
            promote,
            setup=STANDBY,
        ),
    ]
