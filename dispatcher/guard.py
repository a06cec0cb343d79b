"""Refusing private, loopback, link-local and reserved targets, checked after DNS resolution.

Host names are checked in the connector's resolver, so the address checked is the address
connected to (DNS rebinding cannot slip a private address in after a check). IP literals never
reach a resolver, so they are checked before sending, with localhost, by the check the API
applies when an endpoint is created (``svc.addresses.always_blocked``).
"""

from __future__ import annotations

import socket
from typing import Any

from aiohttp.abc import AbstractResolver, ResolveResult

from dispatcher.errors import BlockedAddress, Unresolved
from svc.addresses import is_public


class GuardedResolver(AbstractResolver):
    """Wraps a resolver and keeps only public addresses; none left raises BlockedAddress.
    ``exempt`` (host, port) is resolved as it is: the egress proxy's own address."""

    def __init__(self, inner: AbstractResolver, exempt: tuple[str, int] | None = None) -> None:
        self._inner = inner
        self._exempt = exempt

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if (host, port) == self._exempt:
            return results
        allowed = [r for r in results if is_public(r["host"])]
        if not allowed:
            raise BlockedAddress(f"{host} resolves only to non-public addresses")
        return allowed

    async def close(self) -> None:
        await self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def address_of(resolver: AbstractResolver, host: str, port: int) -> str:
    """The first address ``resolver`` gives ``host``: ``Unresolved`` when the name does not
    resolve, ``BlockedAddress`` (a guarded resolver's) when it resolves only to refused
    addresses."""
    try:
        found = await resolver.resolve(host, port, socket.AF_UNSPEC)
    except BlockedAddress:
        raise
    except OSError as exc:
        raise Unresolved(f"could not resolve {host}") from exc
    return str(found[0]["host"])
