"""Deliveries through an egress proxy (``SVC_EGRESS_PROXY``): which targets go through it, and
the address each is sent to.

A forward proxy resolves the host it is asked for itself, so the dispatcher's own resolver
(``dispatcher.guard``, which refuses non-public addresses) would never see a proxied target.
``Egress.route`` therefore resolves the target here, through the same guarded resolver, and
the request names the checked address (``Host`` and, for https, SNI and the certificate's
name stay the target's own): the proxy is asked for that address only, so a name that
resolves to a private address at the proxy (DNS rebinding) cannot reach it. The proxy's own
address is exempt from the rules (it is usually in the cluster). Hosts of
``SVC_EGRESS_NO_PROXY`` (no_proxy's form: names and domain suffixes, ``*`` for all) go
directly, as they would without a proxy. Both decisions are kept per host for a few
seconds, so a delivery pays for neither.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass

from aiohttp.abc import AbstractResolver
from yarl import URL

from dispatcher.guard import address_of
from svc.settings import Settings

RESOLVED_TTL = 10.0
"""Seconds a target's checked address is reused, as the connector caches DNS for direct ones."""
MAX_HOSTS = 10_000


@dataclass(frozen=True, slots=True)
class Route:
    """How one delivery is sent through the proxy: to ``url`` (the checked address) with the
    target's own ``host`` header and TLS name."""

    url: URL
    host: str
    server_hostname: str | None


class Egress:
    """The proxy settings and the per-host decisions of one dispatcher process."""

    def __init__(self, settings: Settings, resolver: AbstractResolver) -> None:
        self.proxy = URL(settings.egress_proxy)
        """The proxy, with its credentials when it has some (aiohttp sends them to it, as
        ``Proxy-Authorization``, for CONNECT and for plain requests alike)."""
        self._no_proxy = NoProxy(settings.egress_no_proxy)
        self._resolver = resolver
        self._direct: dict[str, bool] = {}
        self._addresses: dict[tuple[str, int], tuple[float, str]] = {}

    @property
    def exempt(self) -> tuple[str, int]:
        """The proxy's host and port, which the target rules do not apply to."""
        return self.proxy.host or "", self.proxy.port or 0

    def direct(self, host: str) -> bool:
        """Whether ``host`` is on the no-proxy list."""
        found = self._direct.get(host)
        if found is None:
            found = self._no_proxy.matches(host)
            if len(self._direct) >= MAX_HOSTS:
                self._direct.clear()
            self._direct[host] = found
        return found

    async def route(self, url: URL) -> Route:
        """Where to send ``url`` through the proxy; ``Unresolved`` when its host does not
        resolve, ``BlockedAddress`` when it resolves only to refused addresses."""
        host, port = url.host or "", url.port or 0
        address = host if _is_ip(host) else await self._address(host, port)
        authority = host if url.is_default_port() else f"{host}:{port}"
        tls_name = host if url.scheme == "https" and not _is_ip(host) else None
        return Route(url.with_host(address), authority, tls_name)

    async def _address(self, host: str, port: int) -> str:
        now = time.monotonic()
        cached = self._addresses.get((host, port))
        if cached is not None and cached[0] > now:
            return cached[1]
        address = await address_of(self._resolver, host, port)
        if len(self._addresses) >= MAX_HOSTS:
            self._addresses.clear()
        self._addresses[host, port] = (now + RESOLVED_TTL, address)
        return address


class NoProxy:
    """``SVC_EGRESS_NO_PROXY``: comma-separated host names (each also matching its
    subdomains; a leading dot changes nothing), IP addresses, CIDR ranges (``10.0.0.0/8``),
    or ``*`` for every host, as curl and most tools read ``NO_PROXY``."""

    def __init__(self, text: str) -> None:
        entries = [e.strip().lower().lstrip(".") for e in text.split(",") if e.strip()]
        self.everything = "*" in entries
        self.networks = []
        self.names = []
        for entry in entries:
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.names.append(entry)

    def matches(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        if self.everything:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return any(host == name or host.endswith("." + name) for name in self.names)
        return any(address in network for network in self.networks)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
