"""Use cases of API keys: make, roll and revoke a key; every API process is told of a roll
or a revocation after the commit, so a cache of resolved keys drops it within a second."""

from __future__ import annotations

from svc.db import Unit
from svc.orgs import permissions
from svc.orgs.errors import PermissionsExceeded
from svc.orgs.keys import ApiKey, ApiKeys, KeyChanges, make_key
from svc.orgs.model import Scope
from svc.orgs.permissions import Permissions


async def create(
    unit: Unit,
    scope: Scope,
    name: str,
    wanted: Permissions,
    expires_ms: int | None,
    granted: Permissions,
) -> tuple[str, ApiKey]:
    """A new key of ``scope`` for a caller whose own key has ``granted``: it may give no more
    than it has (``PermissionsExceeded``)."""
    lacking = permissions.beyond(wanted, granted)
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
    """A new secret for the key (None: none such in ``scope``, or revoked). A caller whose key
    has ``granted`` may roll only keys with no more permissions than that."""
    found = await keys.get(key_id, scope)
    lacking = None if found is None else permissions.beyond(found.permissions, granted)
    if lacking is not None:
        raise PermissionsExceeded(lacking)
    rolled = await keys.roll(unit, key_id, expire_previous_in, scope)
    if rolled is not None:
        changes.after(unit, key_id)
    return rolled


async def revoke(
    unit: Unit, keys: ApiKeys, changes: KeyChanges, key_id: str, scope: Scope | None = None
) -> ApiKey | None:
    """Revoke the key (None: none such in ``scope``); its secrets stop working at once."""
    revoked = await keys.revoke(unit, key_id, scope)
    if revoked is not None:
        changes.after(unit, key_id)
    return revoked
