"""A private PostgreSQL cluster on a free port, alone or as a primary with a standby."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from harness.ports import free_port
from harness.sampling import tree


def _pg_tool(name: str) -> str:
    """The newest PostgreSQL's ``name`` where Debian puts it, else on PATH."""
    found = Path("/usr/lib/postgresql").glob(f"*/bin/{name}")
    newest = max(found, key=lambda p: int(p.parts[-3]), default=None)
    tool = str(newest) if newest else shutil.which(name)
    if tool is None:
        raise FileNotFoundError(f"{name} (PostgreSQL server binaries) is not installed")
    return tool


def _client(port: int) -> list[str]:
    return ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]


class PrivatePostgres:
    """A throw-away cluster, trust auth on 127.0.0.1, ``settings`` given at every start."""

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

    def _run(self, *args: str) -> str:
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            args = ("runuser", "-u", "postgres", "--", *args)
        return subprocess.run(args, check=True, capture_output=True, text=True, timeout=60).stdout

    def init(self, primary: PrivatePostgres | None = None) -> None:
        """Create the cluster: a new one, or with ``primary`` a streaming standby of it."""
        if primary is not None:
            backup = [_pg_tool("pg_basebackup"), "-D", str(self.data), *_client(primary.port)]
            self._run(*backup, "-R", "-X", "stream", "-c", "fast")
            return
        self._run(
            _pg_tool("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += "".join(f" -c {name}={value}" for name, value in self.settings.items())
        self._pg_ctl("-o", options, "-w", "-l", str(self.folder / "log"), "start")

    def stop(self) -> None:
        self._pg_ctl("-m", "fast", "-w", "stop")

    def promote(self) -> None:
        """Make a standby a primary; returns once it takes writes."""
        self._pg_ctl("-w", "promote")

    def _pg_ctl(self, *args: str) -> None:
        self._run(_pg_tool("pg_ctl"), "-D", str(self.data), *args)

    def sql(self, statement: str) -> str:
        """Run one statement with ``psql`` as the superuser; its output, unaligned."""
        psql = _pg_tool("psql")
        return self._run(psql, *_client(self.port), "-d", "postgres", "-AtXc", statement).strip()

    def kill(self) -> None:
        """SIGKILL every process of the cluster at once, as when its machine dies."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        for process in tree(postmaster):
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()

    def version(self) -> str:
        done = subprocess.run([_pg_tool("postgres"), "--version"], capture_output=True, text=True)
        words = done.stdout.split()  # postgres (PostgreSQL) 15.2 (Debian …)
        return words[2] if len(words) > 2 else done.stdout.strip()

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


class PostgresPair:
    """A primary and its synchronous standby: a commit is answered only once the standby has
    its WAL, so a promoted standby holds every commit a client was told of."""

    STANDBY = "svc_standby"
    """The standby's ``cluster_name``: the application name the primary waits for."""

    def __init__(self) -> None:
        self.primary = PrivatePostgres({"synchronous_commit": "on"})
        self.standby = PrivatePostgres({"cluster_name": self.STANDBY})

    def url(self, database: str) -> str:
        """Both hosts; clients connect to the first that accepts and is writable."""
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write"

    def start(self, within: float = 60) -> None:
        """Start both; returns once the standby streams as the synchronous one."""
        self.primary.init()
        self.primary.start()
        self.standby.init(self.primary)
        self.standby.start()
        self.primary.sql(f"ALTER SYSTEM SET synchronous_standby_names = '{self.STANDBY}'")
        self.primary.sql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + within
        query = (
            "SELECT sync_state FROM pg_stat_replication "
            f"WHERE application_name = '{self.STANDBY}' AND state = 'streaming'"
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
