"""Where and with what a run was measured: machine, versions, load average."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import aio_pika
import psutil
from redis.asyncio import Redis

import svc
from harness.database import server_version

log = logging.getLogger(__name__)

PACKAGES = (
    "aio-pika",
    "aiohttp",
    "asyncpg",
    "orjson",
    "uvloop",
    "redis",
    "celery",
    "kombu",
    "dramatiq",
    "gevent",
    "requests",
)


def machine() -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    system = platform.platform()
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                system = line.split("=", 1)[1].strip('"')
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "os": system,
        "kernel": platform.release(),
    }


async def versions(
    amqp_url: str, redis_url: str, database_url: str, receiver: str
) -> dict[str, str]:
    found = {"python": platform.python_version(), "svc": svc.__version__, "nginx": receiver}
    for package in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[package] = metadata.version(package)
    with contextlib.suppress(Exception):
        connection = await aio_pika.connect(amqp_url)
        async with connection:
            transport = connection.transport
            assert transport is not None
            properties = transport.connection.server_properties
            found["rabbitmq"] = _text(properties.get("version", "unknown"))
    with contextlib.suppress(Exception):
        redis = Redis.from_url(redis_url)
        try:
            found["redis-server"] = (await redis.info("server"))["redis_version"]
        finally:
            await redis.aclose()
    with contextlib.suppress(Exception):
        found["postgresql"] = await server_version(database_url)
    found["commit"] = await asyncio.to_thread(_commit)
    return found


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return done.stdout.strip()


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


async def wait_for_quiet(threshold: float, patience: float) -> list[float]:
    """Wait up to ``patience`` seconds for a 1-minute load average below ``threshold``."""
    deadline = time.monotonic() + patience
    while os.getloadavg()[0] >= threshold and time.monotonic() < deadline:
        log.info("load average %.2f ≥ %.2f; waiting", os.getloadavg()[0], threshold)
        await asyncio.sleep(15)
    return load()
