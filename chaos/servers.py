"""Private servers for fault runs and fault tests: a PostgreSQL cluster (alone, or a primary
with a synchronous streaming standby), a Redis, a RabbitMQ node and a three-node RabbitMQ
cluster of the caller's own, on free ports, and a TCP proxy that can hold, slow down or cut
traffic. The machine's shared services (5432, 5672, 6379) are never touched."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any

PG_BIN = Path("/usr/lib/postgresql")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_port(port: int, within: float) -> None:
    """Return once something accepts connections on 127.0.0.1:``port``."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"nothing listens on port {port}") from None
            await asyncio.sleep(0.1)
        else:
            writer.close()
            return


async def wait_refused(port: int, within: float) -> None:
    """Return once nothing accepts connections on 127.0.0.1:``port`` any more."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return
        writer.close()
        await asyncio.sleep(0.05)
    raise TimeoutError(f"port {port} still accepts connections")


def _pg_tool(name: str) -> str:
    found = sorted(PG_BIN.glob(f"*/bin/{name}"), key=lambda p: int(p.parts[-3]))
    if found:
        return str(found[-1])
    on_path = shutil.which(name)
    if on_path is None:
        raise FileNotFoundError(f"{name} (PostgreSQL server binaries) is not installed")
    return on_path


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run server tools as the postgres user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


class PrivatePostgres:
    """A throw-away cluster (``initdb`` into a temporary folder), trust auth on 127.0.0.1;
    ``settings`` are server settings given at every start (``-c name=value``)."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="svc-pg-"))
        self.data = self.folder / "data"
        self.settings = dict(settings or {})
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            _as_postgres(list(args)), check=True, capture_output=True, text=True, timeout=60
        )
        return done.stdout

    def init(self) -> None:
        self._run(
            _pg_tool("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += "".join(f" -c {name}={value}" for name, value in self.settings.items())
        self._run(
            _pg_tool("pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-w",
            "-l",
            str(self.folder / "log"),
            "start",
        )

    def stop(self) -> None:
        self._run(_pg_tool("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def sql(self, statement: str) -> str:
        """Run one statement with ``psql`` as the superuser; its output, unaligned."""
        return self._run(
            _pg_tool("psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-AtXc",
            statement,
        ).strip()

    def kill(self) -> None:
        """SIGKILL the postmaster and every process of the cluster at once, as when its
        machine dies: nothing is flushed, no connection is closed politely."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        for pid in [postmaster, *_children(postmaster)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def version(self) -> str:
        done = subprocess.run([_pg_tool("postgres"), "--version"], capture_output=True, text=True)
        words = done.stdout.split()  # postgres (PostgreSQL) 15.2 (Debian …)
        return words[2] if len(words) > 2 else done.stdout.strip()

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from ``/proc``)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            # pid (comm) state ppid …; comm may hold spaces and parentheses
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


class PrivateStandby(PrivatePostgres):
    """A streaming standby of ``primary``: ``pg_basebackup -R`` of it into a folder of its own,
    started on a port of its own under the ``cluster_name`` (and so the application name)
    ``name``, which the primary's ``synchronous_standby_names`` can name."""

    def __init__(self, primary: PrivatePostgres, name: str = "svc_standby") -> None:
        super().__init__({"cluster_name": name})
        self.primary = primary
        self.name = name

    def init(self) -> None:
        self._run(
            _pg_tool("pg_basebackup"),
            "-D",
            str(self.data),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.primary.port),
            "-U",
            "postgres",
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
        )

    def promote(self) -> None:
        """Make the standby a primary; returns once it takes writes."""
        self._run(_pg_tool("pg_ctl"), "-D", str(self.data), "-w", "promote")


class PostgresPair:
    """A primary and its standby in synchronous mode (``synchronous_standby_names`` names the
    standby, ``synchronous_commit = on``): a commit is answered only once the standby has its
    WAL, so a promoted standby holds every commit a client was told of."""

    def __init__(self) -> None:
        self.primary = PrivatePostgres({"synchronous_commit": "on"})
        self.standby = PrivateStandby(self.primary)

    def url(self, database: str) -> str:
        """Both hosts, and only a writable one will do: asyncpg (and libpq) connect to the
        first host that accepts and is not in recovery."""
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write"

    def start(self, within: float = 60) -> None:
        """Start the primary, copy it into the standby and start that, then make commits wait
        for the standby once it streams."""
        self.primary.init()
        self.primary.start()
        self.standby.init()
        self.standby.start()
        self.primary.sql(f"ALTER SYSTEM SET synchronous_standby_names = '{self.standby.name}'")
        self.primary.sql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + within
        query = (
            "SELECT sync_state FROM pg_stat_replication "
            f"WHERE application_name = '{self.standby.name}' AND state = 'streaming'"
        )
        while self.primary.sql(query) != "sync":
            if time.monotonic() > deadline:
                raise TimeoutError("the standby never became the synchronous standby")
            time.sleep(0.2)

    def remove(self) -> None:
        self.standby.remove()
        self.primary.remove()


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.remove()


@contextlib.contextmanager
def private_postgres_pair() -> Iterator[PostgresPair]:
    pair = PostgresPair()
    try:
        pair.start()
        yield pair
    finally:
        pair.remove()


class PrivateRedis:
    """A Redis of the caller's own without persistence; ``stop`` and ``start`` keep the port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            stdout=asyncio.subprocess.DEVNULL,
        )
        await wait_port(self.port, 10)

    async def stop(self) -> None:
        """Every connection drops and every key is gone (nothing is persisted)."""
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self.process = None


@contextlib.asynccontextmanager
async def private_redis() -> AsyncIterator[str]:
    """A Redis of the caller's own; yields its URL."""
    server = PrivateRedis()
    try:
        await server.start()
        yield server.url
    finally:
        await server.stop()


class TcpProxy:
    """Forwards 127.0.0.1:<port> to a target. ``hold()`` stops passing bytes either way;
    ``delay`` (``slow()``) holds every chunk read, either way, that many seconds before passing
    it on, in order (a slow link: latency, not a cap on throughput); ``cut()`` resets every
    open connection at once, dropping what was on its way, and takes new ones as before;
    ``close()`` stops listening and drops every connection (the target seems gone)."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self.accepted = 0
        """Connections taken so far."""
        self.cut_connections = 0
        """Connections ``cut()`` has reset so far."""
        self.delay = 0.0
        self._open = asyncio.Event()
        self._open.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def slow(self, seconds: float) -> None:
        """Every chunk read from now on is passed on ``seconds`` later (0: at once)."""
        self.delay = seconds

    @property
    def connections(self) -> int:
        """Connections open through the proxy now."""
        return len(self._links)

    async def __aenter__(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def cut(self) -> int:
        """Reset every open connection, both sides (RST, as a dead middlebox or a failed
        link does), dropping every chunk still on its way; returns how many were cut.
        New connections are taken as before."""
        links = list(self._links)
        for client, upstream in links:
            _reset(client)
            _reset(upstream)
        self._links.clear()
        self.cut_connections += len(links)
        await self._cancel()
        return len(links)

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._cancel()

    async def _cancel(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        link = (writer, up_writer)
        self._links.add(link)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            chunks: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()
            self._spawn(self._read(source, chunks))
            self._spawn(self._send(chunks, sink, link))

    async def _read(
        self, source: asyncio.StreamReader, chunks: asyncio.Queue[tuple[float, bytes] | None]
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            while data := await source.read(65536):
                chunks.put_nowait((loop.time() + self.delay, data))
        except (OSError, asyncio.IncompleteReadError):
            pass
        chunks.put_nowait(None)  # after everything read: the end passes on too

    async def _send(
        self,
        chunks: asyncio.Queue[tuple[float, bytes] | None],
        sink: asyncio.StreamWriter,
        link: tuple[asyncio.StreamWriter, asyncio.StreamWriter],
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            while (chunk := await chunks.get()) is not None:
                due, data = chunk
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
                await self._open.wait()
                sink.write(data)
                await sink.drain()
        except OSError:
            pass
        finally:
            sink.close()  # the other direction then reads its end and closes too
            self._links.discard(link)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close a connection with a reset instead of an orderly end (SO_LINGER 0)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


QUIET_ERLANG = "+sbwt none +sbwtdcpu none +sbwtdio none"
"""Erlang schedulers that sleep when idle instead of spinning: several nodes on two cores."""


class PrivateRabbitMQ:
    """A RabbitMQ node of the caller's own (a second node beside the shared one). ``stop_app``
    and ``start_app`` stop the broker in a running node; ``stop`` and ``start`` the whole node,
    which keeps its name, ports and data."""

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
        base = self.folder
        env = {
            **os.environ,
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "plugins"),
            "RABBITMQ_PID_FILE": str(base / "pid"),
            "RABBITMQ_FEATURE_FLAGS_FILE": str(base / "feature_flags"),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
        }
        if self.erl_args:
            env["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"] = self.erl_args
        return env

    async def start(self) -> None:
        """Start the node (again: a cluster member rejoins its cluster by itself)."""
        self.process = await asyncio.create_subprocess_exec(
            "rabbitmq-server",
            env=self._env(),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await wait_port(self.port, 120)

    async def tool(self, tool: str, *args: str, within: float = 60) -> str:
        """Run a RabbitMQ command line tool against this node; returns its output."""
        process = await asyncio.create_subprocess_exec(
            tool,
            "-n",
            self.node,
            *args,
            env=self._env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
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

    async def ctl(self, *args: str, within: float = 60) -> str:
        """Run ``rabbitmqctl`` against this node; returns its output."""
        return await self.tool("rabbitmqctl", *args, within=within)

    async def stop_app(self) -> None:
        """The broker stops (every connection drops); the node stays for ``start_app``."""
        await self.ctl("stop_app")

    async def start_app(self) -> None:
        await self.ctl("start_app")
        await wait_port(self.port, 60)

    async def stop(self) -> None:
        """Stop the whole node (its Erlang VM exits; every connection drops); ``start``
        brings it back with its data."""
        await self.ctl("stop", str(self.folder / "pid"))  # returns once the node is gone
        if self.process is not None:
            try:
                await asyncio.wait_for(self.process.wait(), 30)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self.process = None

    async def remove(self) -> None:
        if self.process is not None:  # not stopped already (``stop`` waits until it is gone)
            with contextlib.suppress(Exception):
                await self.ctl("stop", str(self.folder / "pid"))
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
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
    """Nodes of the caller's own clustered together on this machine: each with its own node
    name, AMQP and distribution ports and data folder, all with the one Erlang cookie of the
    ``rabbitmq`` user (Debian's ``rabbitmq-server`` runs the node as that user)."""

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

    async def running(self, asking: PrivateRabbitMQ) -> set[str]:
        """The nodes ``asking`` sees running in its cluster."""
        status = json.loads(await asking.ctl("cluster_status", "--formatter", "json"))
        return set(status.get("running_nodes", []))

    async def wait_running(self, asking: PrivateRabbitMQ, within: float) -> None:
        """Return once ``asking`` runs its broker and sees every node of the cluster running.
        (Each question starts a command line tool, an Erlang VM of its own: one node is asked,
        once a second, to leave the machine to the service under test.)"""
        deadline = asyncio.get_running_loop().time() + within
        names = {node.node for node in self.nodes}
        await asking.ctl("await_startup", "--timeout", str(round(within)), within=within + 10)
        while True:
            try:
                seen = await self.running(asking)
            except (RuntimeError, TimeoutError, ValueError):
                seen = set()
            if names <= seen:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"{asking.node} sees only {sorted(seen)} running")
            await asyncio.sleep(1)

    async def stop_node(self, node: PrivateRabbitMQ) -> None:
        """Stop one node as a whole; the others go on as the cluster."""
        await node.stop()

    async def start_node(self, node: PrivateRabbitMQ, within: float = 120) -> None:
        """Start a stopped node and wait until it is back in the cluster, and every quorum
        queue has its member there online again (stopping another node then loses no
        queue's majority)."""
        await node.start()
        await self.wait_running(node, within)
        await node.tool(
            "rabbitmq-upgrade",
            "await_online_quorum_plus_one",
            "--timeout",
            str(round(within)),
            within=within + 10,
        )

    async def connections(self) -> dict[PrivateRabbitMQ, int]:
        """Each node's AMQP client connections now (told apart by the port they came in on)."""
        counts = dict.fromkeys(self.nodes, 0)
        by_port = {node.port: node for node in self.nodes}
        listed = await self.ctl("list_connections", "port", "--formatter", "json")
        for row in json.loads(listed or "[]"):
            node = by_port.get(int(row.get("port", 0)))
            if node is not None:
                counts[node] += 1
        return counts

    async def busiest(self) -> PrivateRabbitMQ:
        """The node with the most client connections (the first node when there are none)."""
        counts = await self.connections()
        return max(self.nodes, key=lambda node: counts[node])

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
