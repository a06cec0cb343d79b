"""A private RabbitMQ node, and a cluster of three, on free ports."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
import uuid
from asyncio.subprocess import DEVNULL, PIPE
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

from harness.ports import free_port, wait_port, wait_until
from harness.processes import ended

QUIET_ERLANG = "+sbwt none +sbwtdcpu none +sbwtdio none"  # idle schedulers sleep, not spin


class PrivateRabbitMQ:
    """A RabbitMQ node of the caller's own; a stopped node keeps its name, ports and data."""

    def __init__(self, erl_args: str = "") -> None:
        self.port = free_port()
        self.dist_port = free_port()
        self.node = f"svct{uuid.uuid4().hex[:8]}@localhost"
        self.erl_args = erl_args
        self.folder = Path(tempfile.mkdtemp(prefix="svc-rmq-"))
        (self.folder / "plugins").write_text("[].\n")
        (self.folder / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.port}\nloopback_users = none\n"
        )
        if os.geteuid() == 0:
            for path in (self.folder, *self.folder.iterdir()):
                shutil.chown(path, "rabbitmq", "rabbitmq")
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(self.folder / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.folder / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.folder / "plugins"),
            "RABBITMQ_PID_FILE": str(self.folder / "pid"),
            "RABBITMQ_FEATURE_FLAGS_FILE": str(self.folder / "feature_flags"),
            "RABBITMQ_CONFIG_FILE": str(self.folder / "rabbitmq.conf"),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": self.erl_args,
        }

    async def start(self) -> None:
        """Start the node (again: a cluster member rejoins its cluster by itself)."""
        self.process = await asyncio.create_subprocess_exec(
            "rabbitmq-server", env=self._env(), stdout=DEVNULL, stderr=DEVNULL
        )
        await wait_port(self.port, 120)

    async def ctl(self, *args: str, within: float = 60, tool: str = "rabbitmqctl") -> str:
        """Run ``rabbitmqctl`` (or another RabbitMQ tool) against this node; its output."""
        command = [tool, "-n", self.node, *args]
        process = await asyncio.create_subprocess_exec(
            *command, env=self._env(), stdout=PIPE, stderr=DEVNULL, start_new_session=True
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), within)
        except TimeoutError:
            # The whole group: the tool is su, a shell and an Erlang VM of its own.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            raise
        if process.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed ({process.returncode})")
        return output.decode()

    async def stop_app(self) -> None:
        """The broker stops (every connection drops); the node stays for ``start_app``."""
        await self.ctl("stop_app")

    async def start_app(self) -> None:
        await self.ctl("start_app")
        await wait_port(self.port, 60)

    async def stop(self) -> None:
        """Stop the whole node (every connection drops); ``start`` brings it back."""
        await self.ctl("stop", str(self.folder / "pid"))  # returns once the node is gone
        await ended(self.process, 30)
        self.process = None

    async def remove(self) -> None:
        if self.process is not None:  # not stopped already (``stop`` waits until it is gone)
            with contextlib.suppress(Exception):
                await self.ctl("stop", str(self.folder / "pid"))
        await ended(self.process, 0)
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.asynccontextmanager
async def private_rabbitmq() -> AsyncIterator[PrivateRabbitMQ]:
    server = PrivateRabbitMQ()
    try:
        await server.start()
        yield server
    finally:
        await server.remove()


class PrivateRabbitCluster:
    """Nodes of the caller's own clustered together, sharing the ``rabbitmq`` user's cookie."""

    def __init__(self, size: int = 3) -> None:
        self.nodes = [PrivateRabbitMQ(QUIET_ERLANG) for _ in range(size)]

    @property
    def url(self) -> str:
        """Every node's URL, comma-separated, as ``SVC_AMQP_URL`` takes them."""
        return ",".join(node.url for node in self.nodes)

    async def ctl(self, *args: str) -> str:
        """``rabbitmqctl`` against the first node that answers."""
        failure: Exception | None = None
        for node in self.nodes:
            try:
                return await node.ctl(*args)
            except (RuntimeError, TimeoutError) as exc:
                failure = exc
        raise RuntimeError(f"no node of the cluster answered: {failure}")

    async def start(self) -> None:
        """Start every node, then join the second and later ones to the first."""
        await asyncio.gather(*(node.start() for node in self.nodes))
        first = self.nodes[0]
        for node in self.nodes[1:]:
            await node.ctl("stop_app")
            await node.ctl("join_cluster", first.node)
            await node.ctl("start_app")
        await self.wait_running(first, 120)

    async def wait_running(self, asking: PrivateRabbitMQ, within: float) -> None:
        """Return once ``asking`` sees every node running (asked once a second: each question
        starts an Erlang VM)."""
        deadline = time.monotonic() + within
        await asking.ctl("await_startup", "--timeout", str(round(within)), within=within + 10)
        if not await wait_until(lambda: self._all_running(asking), deadline - time.monotonic(), 1):
            raise TimeoutError(f"{asking.node} does not see every node running")

    async def _all_running(self, asking: PrivateRabbitMQ) -> bool:
        try:
            status = json.loads(await asking.ctl("cluster_status", "--formatter", "json"))
        except (RuntimeError, TimeoutError, ValueError):
            return False
        return {node.node for node in self.nodes} <= set(status.get("running_nodes", []))

    async def start_node(self, node: PrivateRabbitMQ, within: float = 120) -> None:
        """Start a stopped node; returns once it is back in the cluster with every quorum queue
        member online (stopping another node then loses no majority)."""
        await node.start()
        await self.wait_running(node, within)
        quorum = ["await_online_quorum_plus_one", "--timeout", str(round(within))]
        await node.ctl(*quorum, within=within + 10, tool="rabbitmq-upgrade")

    async def busiest(self) -> PrivateRabbitMQ:
        """The node with the most AMQP client connections (the first when there are none)."""
        listed = await self.ctl("list_connections", "port", "--formatter", "json")
        counts = Counter(int(row.get("port", 0)) for row in json.loads(listed or "[]"))
        return max(self.nodes, key=lambda node: counts[node.port])

    async def remove(self) -> None:
        await asyncio.gather(*(node.remove() for node in self.nodes))


@contextlib.asynccontextmanager
async def private_rabbit_cluster(size: int = 3) -> AsyncIterator[PrivateRabbitCluster]:
    cluster = PrivateRabbitCluster(size)
    try:
        await cluster.start()
        yield cluster
    finally:
        await cluster.remove()
