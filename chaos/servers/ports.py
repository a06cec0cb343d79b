"""Free ports on 127.0.0.1 and waits for a port to accept, or to refuse, connections."""

from __future__ import annotations

import asyncio
import socket
import time


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
