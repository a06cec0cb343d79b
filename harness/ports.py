"""Free ports on 127.0.0.1 and waits for a port to accept, or to refuse, connections."""

from __future__ import annotations

import asyncio
import itertools
import random
import socket
import time
from pathlib import Path

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000


def _below_ephemeral() -> int:
    try:
        return int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


_SPAN = max(_below_ephemeral() - _LOWEST, 1_000)
_turns = itertools.count(random.randrange(_SPAN))
"""This process's walk over the ports it may hand out: from a random start, one after
another, so it never hands out a port twice while others are left."""


def free_port() -> int:
    """A port nothing on 127.0.0.1 listens on now, for a server started next.

    Taken below the kernel's ephemeral range: a port the kernel hands out (``bind`` to 0)
    may be taken by any outgoing connection (to PostgreSQL, RabbitMQ, Redis) before the
    server binds it, while one below that range is only ever taken by a server that asks for
    it by number. The ports are walked in turn, so two calls never return the same one.
    """
    for _ in range(1_000):
        port = _LOWEST + next(_turns) % _SPAN
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError("no free port below the ephemeral range")


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
