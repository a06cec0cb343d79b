"""Which delivery targets count as public."""

from __future__ import annotations

import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from dispatcher.errors import BlockedAddress
from dispatcher.guard import GuardedResolver, is_public, literal_blocked


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "240.0.0.1",
        "not-an-ip",
    ],
)
def test_non_public(address: str) -> None:
    assert not is_public(address)


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
)
def test_public(address: str) -> None:
    assert is_public(address)


def test_literals() -> None:
    assert literal_blocked("127.0.0.1")
    assert literal_blocked("[::1]")
    assert not literal_blocked("8.8.8.8")
    assert not literal_blocked("example.com")


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
