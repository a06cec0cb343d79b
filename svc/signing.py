"""Webhook signatures: ``Svc-Signature: t=<unix>,v1=<hex>`` over ``t`` + ``.`` + raw body.

``verify`` is the receiver-side helper; ``Signer`` is the sender's pre-keyed fast path, and
``StandardSigner`` signs for endpoints in Standard Webhooks mode (``webhook-signature``).
While a rotated secret is still valid a delivery carries one signature per secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import string
import time

SIGNATURE_HEADER = "Svc-Signature"
DEFAULT_TOLERANCE = 300
STANDARD_PREFIX = "whsec_"
_BASE64 = frozenset(string.ascii_letters + string.digits + "+/")


class SignatureError(ValueError):
    """The signature header is missing, malformed, stale or does not match."""


class Signer:
    """Signs bodies for one secret; keyed once, copied per message (cheaper than re-keying)."""

    __slots__ = ("_keyed",)

    def __init__(self, secret: str) -> None:
        self._keyed = hmac.new(secret.encode(), digestmod=hashlib.sha256)

    def header(self, body: bytes, timestamp: int) -> str:
        """The ``Svc-Signature`` value for ``body`` sent at ``timestamp``."""
        return f"t={timestamp},v1={self.digest(body, timestamp)}"

    def digest(self, body: bytes, timestamp: int) -> str:
        """The hex ``v1`` of ``body`` sent at ``timestamp``."""
        mac = self._keyed.copy()
        mac.update(b"%d." % timestamp)
        mac.update(body)
        return mac.hexdigest()


class StandardSigner:
    """Signs as the Standard Webhooks specification does: base64 HMAC-SHA256 over
    ``<webhook-id>.<webhook-timestamp>.<body>``, keyed with the secret's base64 part."""

    __slots__ = ("_keyed",)

    def __init__(self, secret: str) -> None:
        key = standard_key(secret)
        if key is None:
            raise ValueError("the secret is not whsec_ and base64")
        self._keyed = hmac.new(key, digestmod=hashlib.sha256)

    def signature(self, message_id: str, body: bytes, timestamp: int) -> str:
        """One ``v1,<base64>`` entry of ``webhook-signature``."""
        mac = self._keyed.copy()
        mac.update(b"%s.%d." % (message_id.encode(), timestamp))
        mac.update(body)
        return "v1," + base64.b64encode(mac.digest()).decode()


def standard_key(secret: str) -> bytes | None:
    """The HMAC key Standard Webhooks receivers derive from ``whsec_<base64>``, or None when
    the secret has none (a secret made with the URL-safe alphabet, before this scheme)."""
    encoded = secret.removeprefix(STANDARD_PREFIX)
    if not encoded or not all(c in _BASE64 for c in encoded.rstrip("=")):
        return None
    try:
        return base64.b64decode(encoded + "==") or None
    except binascii.Error:
        return None


def new_signing_secret() -> str:
    """A new ``whsec_`` secret: 24 random bytes in standard base64, so that it serves both
    schemes (Standard Webhooks receivers key their HMAC with the decoded bytes)."""
    return STANDARD_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The ``Svc-Signature`` value for ``body``; ``timestamp`` defaults to now."""
    return Signer(secret).header(body, int(time.time()) if timestamp is None else timestamp)


def verify(
    header: str,
    body: bytes,
    secret: str,
    tolerance: int = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> int:
    """Check a received ``Svc-Signature``; return its timestamp or raise SignatureError.

    ``body`` must be the raw request body as received. Any one matching ``v1`` is enough (a
    sender may sign with several secrets while rotating); digests are compared in constant
    time; a timestamp ``tolerance`` seconds or more away from now is rejected.
    """
    timestamp, candidates = _parse(header)
    current = time.time() if now is None else now
    if abs(current - timestamp) >= tolerance:
        raise SignatureError("timestamp outside the tolerance")
    expected = hmac.new(secret.encode(), b"%d.%s" % (timestamp, body), hashlib.sha256).hexdigest()
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(expected.encode(), candidate.encode())
    if not matched:
        raise SignatureError("no signature matches")
    return timestamp


def _parse(header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            raise SignatureError("malformed signature header")
        if key == "t":
            if not value.isdigit():
                raise SignatureError("malformed timestamp")
            timestamp = int(value)
        elif key == "v1":
            candidates.append(value)
    if timestamp is None or not candidates:
        raise SignatureError("signature header needs t and v1")
    return timestamp, candidates
