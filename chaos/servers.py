"""Private servers for fault runs and fault tests: a PostgreSQL cluster, a Redis and a RabbitMQ
node of the caller's own, on free ports, and a TCP proxy that can hold traffic. The machine's
shared services (5432, 5672, 6379) are never touched."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

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
    """A throw-away cluster (``initdb`` into a temporary folder), trust auth on 127.0.0.1."""

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="svc-pg-"))
        self.data = self.folder / "data"
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        subprocess.run(_as_postgres(list(args)), check=True, capture_output=True, timeout=60)

    def init(self) -> None:
        self._run(
            _pg_tool("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
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

    def version(self) -> str:
        done = subprocess.run([_pg_tool("postgres"), "--version"], capture_output=True, text=True)
        words = done.stdout.split()  # postgres (PostgreSQL) 15.2 (Debian …)
        return words[2] if len(words) > 2 else done.stdout.strip()

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.remove()


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
    """Forwards 127.0.0.1:<port> to a target; ``hold()`` stops passing bytes either way."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._open = asyncio.Event()
        self._open.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    async def __aenter__(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                await self._open.wait()
                sink.write(data)
                await sink.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            sink.close()


class PrivateRabbitMQ:
    """A RabbitMQ node of the caller's own (a second node beside the shared one)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dist_port = free_port()
        self.node = f"svct{uuid.uuid4().hex[:8]}@localhost"
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
        return {
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

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            "rabbitmq-server",
            env=self._env(),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await wait_port(self.port, 60)

    async def ctl(self, *args: str) -> str:
        """Run ``rabbitmqctl`` against this node; returns its output."""
        process = await asyncio.create_subprocess_exec(
            "rabbitmqctl",
            "-n",
            self.node,
            *args,
            env=self._env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), 60)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise
        if process.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed ({process.returncode})")
        return output.decode()

    async def stop_app(self) -> None:
        """The broker stops (every connection drops); the node stays for ``start_app``."""
        await self.ctl("stop_app")

    async def start_app(self) -> None:
        await self.ctl("start_app")
        await wait_port(self.port, 60)

    async def remove(self) -> None:
        with contextlib.suppress(Exception):
            await self.ctl("stop", str(self.folder / "pid"))  # returns once the node is gone
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
