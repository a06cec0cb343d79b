"""API keys as records, their secrets' prefixes and the permissions of restricted keys.

A key is a record (``key_…``) of one organisation and environment; its secret
(``svc_test_…``/``svc_live_…``) is kept only as a digest and a readable prefix. Permissions are
``resource:read`` or ``resource:write`` items; a key without permissions (``None``) has full
access, and ``write`` implies ``read``. The API names the permission each of its routes needs
in the route's declaration (``api.routing``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from svc.envelope import iso_ms
from svc.keys.errors import InvalidPermission
from svc.orgs.model import Scope

KEY_PREFIXES = {"test": "svc_test_", "live": "svc_live_"}
READABLE_PREFIX = 12
"""Characters of a key kept readable (``svc_test_AbC``), so people can tell keys apart."""
MAX_NAME = 100
MAX_EXPIRE_PREVIOUS = 7 * 86_400
"""Seconds a rolled key's previous secret may keep working, at most."""

RESOURCES: tuple[str, ...] = (
    "payments",
    "terminals",
    "webhooks",
    "events",
    "refunds",
    "chargebacks",
    "balance",
    "payouts",
    "organisations",
    "api_keys",
    "portal",
)
"""What a permission covers: payments (with cancel, streams and long polls), terminals,
webhooks (endpoints, their operations and deliveries), events (read, resend), refunds,
chargebacks, balance (and its transactions), payouts, organisations (partners), api_keys,
portal (the embeddable portal's one-time links)."""
ACCESS: tuple[str, ...] = ("read", "write")
PERMISSIONS: tuple[str, ...] = tuple(f"{r}:{a}" for r in RESOURCES for a in ACCESS)
"""Every permission, in the order of ``RESOURCES``."""

Permissions = tuple[str, ...] | None
"""A key's permissions: sorted and without repeats, or ``None`` for full access."""


def parse_permissions(items: Iterable[str]) -> tuple[str, ...]:
    """Checked permissions, sorted, without repeats; raises ``InvalidPermission`` naming the
    first item that is not ``resource:read`` or ``resource:write``."""
    found = set()
    for item in items:
        if item not in PERMISSIONS:
            raise InvalidPermission(item)
        found.add(item)
    return tuple(sorted(found))


def allows(granted: Permissions, needed: str) -> bool:
    """True when a key with ``granted`` may do what ``needed`` (a permission) names."""
    if granted is None:
        return True
    resource, _, access = needed.partition(":")
    return needed in granted or (access == "read" and f"{resource}:write" in granted)


FULL_ACCESS = "full_access"
"""What a full-access key has that no restricted key does."""


def beyond(requested: Permissions, granted: Permissions) -> str | None:
    """The first of ``requested`` that ``granted`` does not give (``FULL_ACCESS`` for a
    full-access request), or None: a key may only make keys with a subset of its own."""
    if granted is None:
        return None
    if requested is None:
        return FULL_ACCESS
    return next((item for item in requested if not allows(granted, item)), None)


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored key, without its secret."""

    id: str
    org: str
    env: str
    name: str
    prefix: str
    permissions: Permissions
    created_ms: int
    expires_ms: int | None = None
    revoked_ms: int | None = None
    last_used_ms: int | None = None
    previous_expires_ms: int | None = None
    """When the secret before the last roll stops working (None: it already has)."""

    @property
    def scope(self) -> Scope:
        return Scope(self.org, self.env)

    def usable(self, now_ms: int) -> bool:
        """Neither revoked nor past its expiry at ``now_ms``."""
        return self.revoked_ms is None and (self.expires_ms is None or now_ms < self.expires_ms)

    def public(self) -> dict[str, Any]:
        """The API view: never a secret, nor the organisation id."""
        return {
            "id": self.id,
            "object": "api_key",
            "name": self.name,
            "environment": self.env,
            "prefix": self.prefix,
            "permissions": None if self.permissions is None else list(self.permissions),
            "created_at": iso_ms(self.created_ms),
            "expires_at": _iso(self.expires_ms),
            "last_used_at": _iso(self.last_used_ms),
            "revoked_at": _iso(self.revoked_ms),
        }


@dataclass(frozen=True, slots=True)
class Authenticated:
    """The key a secret belongs to, and until when that secret works (None: no end but the
    key's own)."""

    key: ApiKey
    until_ms: int | None


def environment_of(key: str) -> str | None:
    """The environment a key's prefix names, or None."""
    return next((env for env, prefix in KEY_PREFIXES.items() if key.startswith(prefix)), None)


def _iso(ms: int | None) -> str | None:
    return None if ms is None else iso_ms(ms)
