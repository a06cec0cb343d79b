"""A portal session and the rules of what it carries: the one origin allowed to frame it and
the platform's branding (a name, an accent colour).

A frame origin is ``https://host[:port]``, or plain http to this machine for development
(``http://127.0.0.1:port``, ``http://localhost:port``): scheme, host and port only, nothing
else, because the browser compares it with the framing page's origin as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from svc.orgs.model import Scope

LINK_TTL = 600
"""Seconds a portal link may wait before it is opened."""
SESSION_TTL = 3600
"""Seconds a portal session lasts after its link was opened."""
MAX_NAME = 100
MAX_ORIGIN = 300
ACCENT = re.compile(r"#[0-9a-fA-F]{6}")
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(rf"(?:{_LABEL}\.)*{_LABEL}")
_ORIGIN = re.compile(r"(https|http)://([^/:?#@\s]+)(?::([0-9]{1,5}))?")
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})


def frame_origin(value: str) -> str | None:
    """``value`` as an origin the portal may be framed by, or None when it is not one: an
    https origin, or an http one on 127.0.0.1 or localhost. Lower case, no default port."""
    match = _ORIGIN.fullmatch(value)
    if match is None:
        return None
    scheme, host, port = match.group(1), match.group(2).lower(), match.group(3)
    if not _HOST.fullmatch(host) or (scheme == "http" and host not in LOCAL_HOSTS):
        return None
    if port is not None and not (0 < int(port) < 65536 and port[0] != "0"):
        return None
    if port is None or (scheme, port) in {("https", "443"), ("http", "80")}:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


@dataclass(frozen=True, slots=True)
class Branding:
    """How the platform names itself in the portal; None: the service's own look."""

    name: str | None = None
    accent_color: str | None = None


@dataclass(frozen=True, slots=True)
class PortalSession:
    """A browser's portal session: what one organisation and environment may manage."""

    id: str
    org: str
    env: str
    frame_origin: str | None
    branding: Branding
    csrf: str
    """The token every form of the session carries."""
    expires_ms: int

    @property
    def scope(self) -> Scope:
        return Scope(self.org, self.env)
