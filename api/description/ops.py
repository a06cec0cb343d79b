"""The liveness answer, in the OpenAPI description."""

from __future__ import annotations

from api.openapi import Json, obj


def schemas() -> Json:
    return {
        "Health": obj(
            {
                "status": {"const": "ok"},
                "version": {"type": "string", "description": "The running version."},
            },
            description="Liveness.",
        ),
    }
