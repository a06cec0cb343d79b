"""The faults, injected one at a time: what breaks, for how long, and how it ends."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from redis.asyncio import Redis

from chaos.pods import Pods
from chaos.receivers import Receivers
from chaos.servers import PrivatePostgres, PrivateRabbitCluster, PrivateRabbitMQ, PrivateRedis

log = logging.getLogger(__name__)

NODE = "node"
CLUSTER = "cluster"
"""What the roles run on: one RabbitMQ node, or a three-node cluster (``SVC_AMQP_URL`` names
every node, ``SVC_QUEUE_TYPE=quorum``)."""


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


async def _nothing(world: World) -> None:
    """The control: the same load and the same flaky endpoint, nothing broken."""


def _kill(role: str) -> Action:
    async def kill(world: World) -> None:
        world.pods.kill(role)

    return kill


async def _rabbitmq_stop(world: World) -> None:
    await world.rabbitmq.stop_app()


async def _rabbitmq_start(world: World) -> None:
    await world.rabbitmq.start_app()


def _cluster(world: World) -> PrivateRabbitCluster:
    if world.cluster is None:
        raise RuntimeError("this fault needs the roles on a RabbitMQ cluster")
    return world.cluster


async def _stop_node(world: World, node: PrivateRabbitMQ) -> None:
    asked = time.monotonic()
    await _cluster(world).stop_node(node)
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


async def _postgres_stop(world: World) -> None:
    await asyncio.to_thread(world.postgres.stop)


async def _postgres_start(world: World) -> None:
    await asyncio.to_thread(world.postgres.start)


async def _redis_stop(world: World) -> None:
    await world.redis.stop()


async def _redis_start(world: World) -> None:
    await world.redis.start()


async def _redis_flushall(world: World) -> None:
    client = Redis.from_url(world.redis.url)
    try:
        await client.flushall()
    finally:
        await client.aclose()


async def _receivers_stop(world: World) -> None:
    await world.receivers.stop()


async def _receivers_start(world: World) -> None:
    await world.receivers.start()


def catalogue(
    outage: float = 15.0, redis_outage: float = 10.0, node_outage: float = 30.0
) -> list[Fault]:
    """Every fault of the suite, in the order they run; outages last the given seconds."""
    node_stop, node_start = _node_loss()
    return [
        Fault("baseline", "no fault", 0, _nothing),
        Fault("api-kill", "SIGKILL of the api", 0, _kill("api")),
        Fault("scheduler-kill", "SIGKILL of the scheduler", 0, _kill("scheduler")),
        Fault("dispatcher-kill", "SIGKILL of the dispatcher", 0, _kill("dispatcher")),
        Fault("rabbitmq-restart", "RabbitMQ stopped", outage, _rabbitmq_stop, _rabbitmq_start),
        Fault("postgres-restart", "PostgreSQL stopped", outage, _postgres_stop, _postgres_start),
        Fault("redis-restart", "Redis stopped", redis_outage, _redis_stop, _redis_start),
        Fault("redis-flushall", "Redis FLUSHALL", 0, _redis_flushall),
        Fault("receivers-down", "every receiver down", outage, _receivers_stop, _receivers_start),
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
    ]
