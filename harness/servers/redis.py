"""A private Redis on a free port."""

from __future__ import annotations

import asyncio

from harness.ports import free_port, wait_port
from harness.processes import ended


class PrivateRedis:
    """A Redis of the caller's own without persistence; ``stop`` and ``start`` keep the port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        port = ["--port", str(self.port), "--bind", "127.0.0.1"]
        no_persistence = ["--save", "", "--appendonly", "no"]
        self.process = await asyncio.create_subprocess_exec(
            "redis-server", *port, *no_persistence, stdout=asyncio.subprocess.DEVNULL
        )
        await wait_port(self.port, 10)

    async def stop(self) -> None:
        """Every connection drops and every key is gone (nothing is persisted)."""
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
        await ended(self.process, 10)
        self.process = None

    async def __aenter__(self) -> PrivateRedis:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
