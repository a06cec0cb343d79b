"""The portal session's request and answer, in the OpenAPI description."""

from __future__ import annotations

from api.openapi import TIMESTAMP, Json, obj
from svc.portal.model import MAX_NAME

ORIGIN_PATTERN = (
    r"^(https://[^/?#@\s:]+(:[0-9]{1,5})?|http://(127\.0\.0\.1|localhost)(:[0-9]{1,5})?)$"
)
"""What an origin looks like (``svc.portal.model.frame_origin`` holds the whole rule)."""


def schemas() -> Json:
    return {
        "PortalSessionCreate": obj(
            {
                "frame_origin": {
                    "type": "string",
                    "pattern": ORIGIN_PATTERN,
                    "examples": ["https://app.platform.example"],
                    "description": (
                        "The one origin allowed to frame the portal (scheme://host[:port]): "
                        "https, or http on 127.0.0.1 or localhost for development. Absent: "
                        "no page may frame it; open it as a page of its own."
                    ),
                },
                "name": {
                    "type": "string",
                    "maxLength": MAX_NAME,
                    "description": "The platform's name, shown at the top of the portal.",
                },
                "accent_color": {
                    "type": "string",
                    "pattern": "^#[0-9a-fA-F]{6}$",
                    "examples": ["#0a7cff"],
                    "description": "The platform's colour for links and buttons.",
                },
            },
            required=[],
            description="A one-time portal link for the caller's organisation and environment.",
            examples=[
                {
                    "frame_origin": "https://app.platform.example",
                    "name": "Platform",
                    "accent_color": "#0a7cff",
                }
            ],
        ),
        "PortalSession": obj(
            {
                "object": {"const": "portal_session"},
                "url": {
                    "type": "string",
                    "format": "uri",
                    "description": "Opens the portal once; a second use is refused.",
                },
                "expires_at": {**TIMESTAMP, "description": "The link's last moment to be opened."},
            },
            description="A portal link: give it to the browser at once, for one use.",
        ),
    }
