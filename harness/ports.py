"""Free ports on 127.0.0.1, and waits for a port to accept or refuse or a URL to answer 200."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import socket
import subprocess
import time
from pathlib import Path

import aiohttp

_LOWEST = 10_000


def _below_ephemeral() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


_SPAN = max(_below_ephemeral() - _LOWEST, 1_000)
_turns = itertools.count(random.randrange(_SPAN))
"""This process's walk over its ports from a random start, so no port is handed out twice."""


def free_port() -> int:
    """A port nothing on 127.0.0.1 listens on now, for a server started next: below the
    kernel's ephemeral range, so no outgoing connection takes it before the server binds it."""
    for _ in range(1_000):
        port = _LOWEST + next(_turns) % _SPAN
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


async def wait_port(port: int, within: float = 20, watched: Watched = None) -> None:
    """Return once something accepts connections on 127.0.0.1:``port``."""
    deadline = time.monotonic() + within
    while True:
        _check(watched)
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on port {port}") from None
            await asyncio.sleep(0.05)
        else:
            writer.close()
            return


async def wait_ready(url: str, watched: Watched = None, within: float = 30) -> None:
    """Return once ``url`` answers 200."""
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession() as session:
        while True:
            _check(watched)
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url) as response:
                    if response.status == 200:
                        return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} not ready")
            await asyncio.sleep(0.05)


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
