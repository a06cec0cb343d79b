"""The dispatcher's resolver keeps only public addresses."""

from __future__ import annotations

import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from dispatcher.errors import BlockedAddress
from dispatcher.guard import GuardedResolver


class FixedResolver(AbstractResolver):
    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host=a, port=port, family=family, proto=0, flags=0)
            for a in self.addresses
        ]

    async def close(self) -> None:
        return None


async def test_resolver_refuses_private_only_answers() -> None:
    with pytest.raises(BlockedAddress):
        await GuardedResolver(FixedResolver("127.0.0.1", "10.0.0.1")).resolve("evil.example", 80)


async def test_resolver_keeps_only_public_answers() -> None:
    found = await GuardedResolver(FixedResolver("10.0.0.1", "8.8.8.8")).resolve("mixed.example", 80)
    assert [r["host"] for r in found] == ["8.8.8.8"]
