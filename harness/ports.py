"""Free ports on 127.0.0.1, waits for a port, a URL or a condition, and tasks cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import os
import random
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

_LOWEST = 10_000
try:
    _EPHEMERAL = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
except (OSError, ValueError, IndexError):
    _EPHEMERAL = 32_768
_SPAN = max(_EPHEMERAL - _LOWEST, 1_000)
_turns = itertools.count(random.randrange(_SPAN))
"""This process's walk over its ports from a random start, so no port is handed out twice."""


def free_port() -> int:
    """A port nothing on 127.0.0.1 listens on now, for a server started next: below the
    kernel's ephemeral range, so no outgoing connection takes it before the server binds it.
    Each pytest-xdist worker takes every n-th port from its own offset: walks of two workers
    that met could hand one port to two servers about to bind it."""
    stripe = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    stripes = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    for _ in range(1_000):
        port = _LOWEST + next(_turns) % (_SPAN // stripes) * stripes + stripe
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError("no free port below the ephemeral range")


Watched = subprocess.Popen[bytes] | asyncio.subprocess.Process | asyncio.Task[None] | None
"""What is coming up: a wait fails at once if it ends first."""


def _check(watched: Watched) -> None:
    if isinstance(watched, asyncio.Task):
        if watched.done():
            watched.result()
            raise RuntimeError("stopped during start-up")
    elif watched is not None:
        code = watched.poll() if isinstance(watched, subprocess.Popen) else watched.returncode
        if code is not None:
            raise RuntimeError(f"exited with {code} during start-up")


async def _accepts(port: int, watched: Watched = None) -> bool:
    """Whether 127.0.0.1:``port`` accepts a connection now (failing if ``watched`` ended)."""
    _check(watched)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    return True


async def _refuses(port: int) -> bool:
    return not await _accepts(port)


async def wait_port(port: int, within: float = 20, watched: Watched = None) -> None:
    """Return once something accepts connections on 127.0.0.1:``port``."""
    if not await wait_until(lambda: _accepts(port, watched), within, 0.05):
        raise TimeoutError(f"nothing listens on port {port}")


async def _answers(session: aiohttp.ClientSession, url: str, watched: Watched) -> bool:
    _check(watched)
    with contextlib.suppress(aiohttp.ClientError):
        async with session.get(url) as response:
            return response.status == 200
    return False


async def wait_ready(url: str, watched: Watched = None, within: float = 30) -> None:
    """Return once ``url`` answers 200."""
    async with aiohttp.ClientSession() as session:
        if not await wait_until(lambda: _answers(session, url, watched), within, 0.05):
            raise TimeoutError(f"{url} not ready")


async def wait_refused(port: int, within: float) -> None:
    """Return once nothing accepts connections on 127.0.0.1:``port`` any more."""
    if not await wait_until(lambda: _refuses(port), within, 0.05):
        raise TimeoutError(f"port {port} still accepts connections")


async def wait_until(
    done: Callable[[], bool | Awaitable[bool]], within: float, every: float = 0.25
) -> bool:
    """Ask ``done`` every ``every`` seconds until it holds (True) or ``within`` seconds pass."""
    deadline = time.monotonic() + within
    while True:
        held = done()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(every)


async def cancel(*tasks: asyncio.Task[None]) -> None:
    """Cancel ``tasks`` and wait until each has ended, whatever it raised."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
