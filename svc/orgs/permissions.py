"""Permissions of restricted API keys: ``resource:read`` or ``resource:write`` items.

A key without permissions (``None``) has full access. ``write`` implies ``read``. The API names
the permission each of its routes needs in the route's declaration (``api.routing``).
"""

from __future__ import annotations

from collections.abc import Iterable

from svc.orgs.errors import InvalidPermission

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
)
"""What a permission covers: payments (with cancel, streams and long polls), terminals,
webhooks (endpoints, their operations and deliveries), events (read, resend), refunds,
chargebacks, balance (and its transactions), payouts, organisations (partners), api_keys."""
ACCESS: tuple[str, ...] = ("read", "write")
PERMISSIONS: tuple[str, ...] = tuple(f"{r}:{a}" for r in RESOURCES for a in ACCESS)
"""Every permission, in the order of ``RESOURCES``."""

Permissions = tuple[str, ...] | None
"""A key's permissions: sorted and without repeats, or ``None`` for full access."""


def parse(items: Iterable[str]) -> tuple[str, ...]:
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
