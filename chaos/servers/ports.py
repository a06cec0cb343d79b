"""Free ports on 127.0.0.1 and waits for a port to accept, or to refuse, connections."""

from __future__ import annotations

import asyncio
import random
import socket
import time
from pathlib import Path

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000


def free_port() -> int:
    """A port nothing on 127.0.0.1 listens on now, for a server started next.

    Drawn below the kernel's ephemeral range: a port the kernel hands out (``bind`` to 0)
    may be taken by any outgoing connection (to PostgreSQL, RabbitMQ, Redis) before the
    server binds it, while one below that range is only ever taken by a server that asks for
    it by number.
    """
    try:
        below = int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        below = 32_768
    for _ in range(100):
        port = random.randrange(_LOWEST, max(below, _LOWEST + 1_000))
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
