"""Identifiers: a type prefix and a time-ordered random part (``evt_01j…``)."""

from __future__ import annotations

import base64
import secrets
import time

_ALPHABET = "0123456789abcdefghijklmnopqrstuv"  # base32hex, lower case: sorts like the number
MAX_ID_LENGTH = 255


def new_id(prefix: str) -> str:
    """A new id like ``evt_0ssd…``: 48 bits of milliseconds then 80 random bits, so ids of
    one kind sort by creation time."""
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    text = base64.b32hexencode(value.to_bytes(16, "big"))[:26].decode().lower()
    return f"{prefix}_{text}"


def has_prefix(value: str, prefix: str) -> bool:
    """True when ``value`` looks like an id of this prefix."""
    rest = value[len(prefix) + 1 :]
    return value.startswith(prefix + "_") and len(rest) == 26 and all(c in _ALPHABET for c in rest)


def is_opaque_id(value: str) -> bool:
    """True when ``value`` can be an id chosen by someone else (a foreign producer's event id,
    ``order-123``): 1 to ``MAX_ID_LENGTH`` printable characters, none of them ``/``, so it
    fits a URL path segment, a header and a PostgreSQL text column."""
    return 0 < len(value) <= MAX_ID_LENGTH and value.isprintable() and "/" not in value


def new_secret(prefix: str, nbytes: int = 24) -> str:
    """A random secret with a readable prefix, such as ``whsec_…`` or ``svc_test_…``."""
    return f"{prefix}{secrets.token_urlsafe(nbytes)}"
