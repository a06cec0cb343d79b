"""Which hosts deliveries may reach: globally routable unicast addresses only.

A host that is always refused (``always_blocked``) is refused by the API when an endpoint is
created and by the dispatcher before sending (a stored URL may predate the check); the
dispatcher's resolver checks the addresses other host names resolve to.

An IPv6 address may carry an IPv4 address that the network it crosses delivers to, so a
private IPv4 address must not pass wrapped in IPv6 (``is_public``):

- IPv4-mapped (``::ffff:0:0/96``), NAT64 with the well-known prefix (``64:ff9b::/96``, the
  last 32 bits) and 6to4 (``2002::/16``, bits 16 to 47): public only when the IPv4 address
  they carry is.
- Refused outright, whatever they carry: everything else under ``::/8`` (IPv4-compatible
  ``::/96``, IPv4-translated ``::ffff:0:0:0/96``, the local-use NAT64 prefix
  ``64:ff9b:1::/48``, which only a private network's translator serves), Teredo
  (``2001::/32``: server in bits 32 to 63, client inverted in the last 32; a tunnel to
  wherever the client claims to be) and site-local ``fec0::/10``, along with every other
  address outside global unicast ``2000::/3``.
"""

from __future__ import annotations

import ipaddress
import socket

GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
TEREDO = ipaddress.IPv6Network("2001::/32")


def is_public(address: str) -> bool:
    """True for globally routable unicast addresses, and for IPv6 forms of such an IPv4 one
    (the module's docstring lists which)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv4Address):
        return _public_v4(ip)
    embedded = _carried_v4(ip)
    if embedded is not None:
        return _public_v4(embedded)
    return ip in GLOBAL_UNICAST and ip not in TEREDO and ip.is_global


def _public_v4(ip: ipaddress.IPv4Address) -> bool:
    return ip.is_global and not ip.is_multicast


def _carried_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped, NAT64 (well-known prefix) or 6to4 address carries."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


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
