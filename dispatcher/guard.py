"""Refusing private, loopback, link-local and reserved targets, checked after DNS resolution.

Host names are checked in the connector's resolver, so the address checked is the address
connected to (DNS rebinding cannot slip a private address in after a check). IP literals never
reach a resolver, so they are checked before sending.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

from aiohttp.abc import AbstractResolver, ResolveResult

from dispatcher.errors import BlockedAddress


def is_public(address: str) -> bool:
    """True for globally routable unicast addresses."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def literal_blocked(host: str) -> bool:
    """True when ``host`` is an IP literal that is not public."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return not is_public(host.strip("[]"))


class GuardedResolver(AbstractResolver):
    """Wraps a resolver and keeps only public addresses; none left raises BlockedAddress."""

    def __init__(self, inner: AbstractResolver) -> None:
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        allowed = [r for r in results if is_public(r["host"])]
        if not allowed:
            raise BlockedAddress(f"{host} resolves only to non-public addresses")
        return allowed

    async def close(self) -> None:
        await self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
