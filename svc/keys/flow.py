"""Use cases of API keys: make, roll and revoke a key; every API process is told of a roll
or a revocation after the commit, so a cache of resolved keys drops it within a second.

Each is bounded by the caller's own key: a key with ``granted`` permissions may make, roll or
revoke only keys with no more permissions than that (``PermissionsExceeded`` names the first
it lacks), so a restricted key can neither mint nor take over nor lock out a wider one.
"""

from __future__ import annotations

from svc.db import Unit
from svc.keys.errors import PermissionsExceeded
from svc.keys.model import ApiKey, Permissions, beyond
from svc.keys.store import ApiKeys, KeyChanges, make_key
from svc.orgs.model import Scope


async def create(
    unit: Unit,
    scope: Scope,
    name: str,
    wanted: Permissions,
    expires_ms: int | None,
    granted: Permissions,
) -> tuple[str, ApiKey]:
    """A new key of ``scope``, with no more than ``granted``."""
    lacking = beyond(wanted, granted)
    if lacking is not None:
        raise PermissionsExceeded(lacking)
    return await make_key(unit, scope, name, wanted, expires_ms)


async def roll(
    unit: Unit,
    keys: ApiKeys,
    changes: KeyChanges,
    key_id: str,
    expire_previous_in: int,
    scope: Scope | None = None,
    granted: Permissions = None,
) -> tuple[str, ApiKey] | None:
    """A new secret for the key (None: none such in ``scope``, or revoked), within
    ``granted``."""
    await _within(keys, key_id, scope, granted)
    rolled = await keys.roll(unit, key_id, expire_previous_in, scope)
    if rolled is not None:
        changes.after(unit, key_id)
    return rolled


async def revoke(
    unit: Unit,
    keys: ApiKeys,
    changes: KeyChanges,
    key_id: str,
    scope: Scope | None = None,
    granted: Permissions = None,
) -> ApiKey | None:
    """Revoke the key (None: none such in ``scope``), within ``granted``; its secrets stop
    working at once."""
    await _within(keys, key_id, scope, granted)
    revoked = await keys.revoke(unit, key_id, scope)
    if revoked is not None:
        changes.after(unit, key_id)
    return revoked


async def _within(keys: ApiKeys, key_id: str, scope: Scope | None, granted: Permissions) -> None:
    """Refuse a caller with ``granted`` a key that has more (a key's permissions never
    change, so reading it before the change's own lock is enough)."""
    if granted is None:
        return
    found = await keys.get(key_id, scope)
    lacking = None if found is None else beyond(found.permissions, granted)
    if lacking is not None:
        raise PermissionsExceeded(lacking)
