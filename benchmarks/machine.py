"""Where and with what a run was measured: machine, versions, load average."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import time
from importlib import metadata
from pathlib import Path
from subprocess import PIPE
from typing import Any

import aio_pika
import psutil
from redis.asyncio import Redis

import svc
from harness.database import server_version

log = logging.getLogger(__name__)

PACKAGES = "aio-pika aiohttp asyncpg orjson uvloop redis celery kombu dramatiq gevent requests"


def machine() -> dict[str, Any]:
    cpu, system = "unknown", platform.platform()
    with contextlib.suppress(OSError):
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = next((line.split(":", 1)[1].strip() for line in lines if "model name" in line), cpu)
    with contextlib.suppress(OSError, KeyError):
        system = platform.freedesktop_os_release()["PRETTY_NAME"]
    memory = round(psutil.virtual_memory().total / 2**30, 1)
    cores, kernel = os.cpu_count(), platform.release()
    return {"cpu": cpu, "cores": cores, "memory_gb": memory, "os": system, "kernel": kernel}


async def versions(amqp_url: str, redis_url: str, database_url: str, nginx: str) -> dict[str, str]:
    """Python, the service, nginx, the installed packages of ``PACKAGES`` and the servers."""
    found = {"python": platform.python_version(), "svc": svc.__version__, "nginx": nginx}
    for package in PACKAGES.split():
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[package] = metadata.version(package)
    with contextlib.suppress(Exception):
        async with await aio_pika.connect(amqp_url) as connection:
            assert connection.transport is not None
            version = connection.transport.connection.server_properties.get("version", "?")
            found["rabbitmq"] = version.decode() if isinstance(version, bytes) else str(version)
    with contextlib.suppress(Exception):
        async with Redis.from_url(redis_url) as redis:
            found["redis-server"] = (await redis.info("server"))["redis_version"]
    with contextlib.suppress(Exception):
        found["postgresql"] = await server_version(database_url)
    with contextlib.suppress(OSError):
        git = await asyncio.create_subprocess_exec(
            *("git", "rev-parse", "--short", "HEAD"), stdout=PIPE, cwd=svc.__path__[0]
        )
        found["commit"] = (await git.communicate())[0].decode().strip() or "unknown"
    return found


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


async def wait_for_quiet(threshold: float, patience: float) -> list[float]:
    """Wait up to ``patience`` seconds for a 1-minute load average below ``threshold``."""
    deadline = time.monotonic() + patience
    while os.getloadavg()[0] >= threshold and time.monotonic() < deadline:
        log.info("load average %.2f ≥ %.2f; waiting", os.getloadavg()[0], threshold)
        await asyncio.sleep(15)
    return load()
