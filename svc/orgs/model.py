"""A scope is what an API key sees: one organisation in one environment."""

from __future__ import annotations

from dataclasses import dataclass

KEY_PREFIXES = {"test": "svc_test_", "live": "svc_live_"}
READABLE_PREFIX = 12
"""Characters of a key kept readable (``svc_test_AbC``), so people can tell keys apart."""


@dataclass(frozen=True, slots=True)
class Scope:
    """One organisation in one environment (``test`` or ``live``)."""

    org: str
    env: str


def environment_of(key: str) -> str | None:
    """The environment a key's prefix names, or None."""
    return next((env for env, prefix in KEY_PREFIXES.items() if key.startswith(prefix)), None)
