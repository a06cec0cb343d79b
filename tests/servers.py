"""Private servers for fault tests: a PostgreSQL cluster and a Redis of the test's own, on
free ports, and a TCP proxy that can hold traffic. The shared services are never stopped."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from tests.conftest import free_port

PG_BIN = Path("/usr/lib/postgresql")


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

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
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


@contextlib.asynccontextmanager
async def private_redis() -> AsyncIterator[str]:
    """A Redis of the test's own; yields its URL."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        "redis-server",
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        stdout=asyncio.subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            await asyncio.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        await process.wait()


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
