"""Use cases of the portal: open a one-time link for a scope, and start a session with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.orgs.model import Scope
from svc.portal.model import LINK_TTL, SESSION_TTL, Branding, PortalSession

if TYPE_CHECKING:
    from svc.context import Context


async def open_link(
    ctx: Context, scope: Scope, key_id: str, frame_origin: str | None, branding: Branding
) -> tuple[str, int]:
    """A one-time link's token for ``scope`` and when it expires (epoch ms), asked for by the
    API key ``key_id``: revoking the key ends the link and the session it starts."""
    async with ctx.unit() as unit:
        return await ctx.portal.create(unit, scope, key_id, frame_origin, branding, LINK_TTL)


async def start(ctx: Context, token: str) -> tuple[str, PortalSession] | None:
    """Redeem a link: the new session's cookie and the session, or None (unknown, expired or
    used before)."""
    return await ctx.portal.redeem(token, SESSION_TTL)
