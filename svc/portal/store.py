"""Portal sessions in PostgreSQL: made as a one-time link, redeemed once into a session, and
read by the session's cookie. Only SHA-256 digests of the link's token and of the cookie are
kept; every read is bounded by its expiry and by the key that asked for the link: revoked or
expired, it ends the link and the session."""

from __future__ import annotations

import secrets
from typing import Any

from svc.crypto import digest
from svc.db import Database, Queries
from svc.db.times import to_ms
from svc.ids import new_id
from svc.orgs.model import Scope
from svc.portal.model import Branding, PortalSession

_COLUMNS = "id, org_id, env, frame_origin, name, accent_color, csrf, expires_at"
_KEY_USABLE = """(key_id IS NULL OR EXISTS (
    SELECT 1 FROM api_keys k WHERE k.id = portal_sessions.key_id AND k.revoked_at IS NULL
        AND (k.expires_at IS NULL OR k.expires_at > now())))"""
"""The key that asked for the link is neither revoked nor expired (no key: made before keys
were recorded)."""


def _session(row: Any) -> PortalSession:
    return PortalSession(
        row["id"],
        row["org_id"],
        row["env"],
        row["frame_origin"],
        Branding(row["name"], row["accent_color"]),
        row["csrf"],
        to_ms(row["expires_at"]),
    )


class PortalSessions:
    """Makes one-time links, redeems them into sessions, and reads sessions by cookie."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self,
        q: Queries,
        scope: Scope,
        key_id: str,
        frame_origin: str | None,
        branding: Branding,
        link_ttl: int,
    ) -> tuple[str, int]:
        """A new link's token (returned only here) and when it stops working (epoch ms); it
        and its session last while the key ``key_id`` that asked for it does."""
        token = secrets.token_urlsafe(32)
        expires = await q.fetchval(
            """INSERT INTO portal_sessions (id, org_id, env, link_digest, frame_origin, name,
                   accent_color, csrf, link_expires_at, key_id)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9), $10)
               RETURNING link_expires_at""",
            new_id("pts"),
            scope.org,
            scope.env,
            digest(token),
            frame_origin,
            branding.name,
            branding.accent_color,
            secrets.token_urlsafe(32),
            link_ttl,
            key_id,
        )
        return token, to_ms(expires)

    async def redeem(self, token: str, session_ttl: int) -> tuple[str, PortalSession] | None:
        """The cookie (returned only here) and session a link's ``token`` starts; None when
        there is no such link, it expired, or it was opened before."""
        cookie = secrets.token_urlsafe(32)
        row = await self._db.fetchrow(
            f"""UPDATE portal_sessions
                SET redeemed_at = now(), cookie_digest = $2,
                    expires_at = now() + make_interval(secs => $3)
                WHERE link_digest = $1 AND redeemed_at IS NULL AND link_expires_at > now()
                    AND {_KEY_USABLE}
                RETURNING {_COLUMNS}""",
            digest(token),
            digest(cookie),
            session_ttl,
        )
        return None if row is None else (cookie, _session(row))

    async def frame_origin(self, token: str) -> str | None:
        """The frame origin of a link, opened or not (None: unknown, or framed by no page), so
        the page refusing it can still be shown in its frame."""
        found: str | None = await self._db.fetchval(
            "SELECT frame_origin FROM portal_sessions WHERE link_digest = $1", digest(token)
        )
        return found

    async def load(self, cookie: str) -> PortalSession | None:
        """The session of a cookie, while it lasts and its key is usable."""
        row = await self._db.fetchrow(
            f"""SELECT {_COLUMNS} FROM portal_sessions
                WHERE cookie_digest = $1 AND expires_at > now() AND {_KEY_USABLE}""",
            digest(cookie),
        )
        return None if row is None else _session(row)
