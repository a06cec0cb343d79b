"""Use cases of organisations: a partner connects a new organisation for a customer.

A partner creates organisations for its customers; each gets one test and one live API key,
returned once. With the header ``Svc-Organisation`` a partner's key acts for one of its
connected organisations (same environment). For every fee charged to a connected
organisation the partner's balance receives 10 % of the fee's percentage part as a
``partner_commission`` movement (``svc.money.flow.charges``); the partner's earnings sum those
by month (``Organisations.earnings``).
"""

from __future__ import annotations

from svc.db import Unit
from svc.keys.model import KEY_PREFIXES
from svc.keys.store import make_key
from svc.orgs.model import Organisation, Scope
from svc.orgs.store import Organisations


async def connect(
    unit: Unit, orgs: Organisations, partner_id: str, name: str, now_ms: int
) -> tuple[Organisation, dict[str, str]]:
    """A new organisation of ``partner_id`` and its test and live keys (shown only here);
    raises NameTaken when an organisation has ``name``."""
    org = await orgs.create_connected(unit, partner_id, name, now_ms)
    keys = {}
    for env in KEY_PREFIXES:
        keys[env], _ = await make_key(unit, Scope(org.id, env))
    return org, keys
