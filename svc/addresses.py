"""Which hosts deliveries may reach: globally routable unicast addresses only.

A host that is always refused (``always_blocked``) is refused by the API when an endpoint is
created and by the dispatcher before sending (a stored URL may predate the check); the
dispatcher's resolver checks the addresses other host names resolve to.
"""

from __future__ import annotations

import ipaddress
import socket


def is_public(address: str) -> bool:
    """True for globally routable unicast addresses."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def always_blocked(host: str) -> bool:
    """True when deliveries to ``host`` are refused whatever DNS answers: a non-public IP
    literal (also in the short IPv4 forms the resolver reads, such as ``127.1``), or
    ``localhost`` and the names under it (RFC 6761)."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    if _literal_blocked(name):
        return True
    legacy = _legacy_ipv4(name)
    return legacy is not None and not is_public(legacy)


def _literal_blocked(name: str) -> bool:
    """True when ``name`` is an IP literal that is not public."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return not is_public(name)


def _legacy_ipv4(name: str) -> str | None:
    """The dotted quad of an IPv4 literal in a short, octal or hexadecimal form, which the
    resolver reads as that address (``127.1``, ``0x7f000001``, ``2130706433``)."""
    if not name or not all(c.isascii() and (c.isalnum() or c == ".") for c in name):
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(name))
    except OSError:
        return None
