"""Secrets at rest: digests for what we only compare, AES-GCM for what we must send.

``SVC_SECRET_KEY`` lists one or more ``KEYID:KEY`` items (KEY: 32 random bytes, base64url).
The first key encrypts; every listed key decrypts, so a key is rotated by putting a new one
first and re-encrypting (``svc secrets reencrypt``) before the old one is removed. Each
ciphertext names its key id and is bound to the row it belongs to (associated data), so a
ciphertext copied onto another row does not decrypt.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from datetime import UTC, datetime

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from svc.settings import SettingsError

_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,32}")
NONCE_BYTES = 12


class SecretKeyError(SettingsError):
    """``SVC_SECRET_KEY`` is missing or malformed."""


def digest(secret: str) -> bytes:
    """SHA-256 of a random secret (API keys, device secrets): nothing to look up by brute force."""
    return hashlib.sha256(secret.encode()).digest()


def new_key_text(key_id: str | None = None) -> str:
    """A fresh ``KEYID:KEY`` item for ``SVC_SECRET_KEY``."""
    key_id = key_id or datetime.now(UTC).strftime("k%Y%m%d%H%M%S")
    return f"{key_id}:{base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip('=')}"


class SecretBox:
    """Encrypts with the first key, decrypts with any."""

    def __init__(self, keys: list[tuple[str, bytes]]) -> None:
        if not keys:
            raise SecretKeyError("SVC_SECRET_KEY: at least one key is needed")
        self.current = keys[0][0]
        self._ciphers = {key_id: AESGCM(key) for key_id, key in keys}

    @classmethod
    def parse(cls, text: str) -> SecretBox:
        """Read ``SVC_SECRET_KEY``; raises SecretKeyError with what is wrong."""
        if not text.strip():
            raise SecretKeyError(
                "SVC_SECRET_KEY is not set: it encrypts webhook signing secrets at rest. "
                "Create one with `svc secrets new-key` and keep it in your secret store."
            )
        keys = []
        for item in text.split(","):
            key_id, sep, encoded = item.strip().partition(":")
            if not sep or not _KEY_ID.fullmatch(key_id):
                raise SecretKeyError(f"SVC_SECRET_KEY: item {key_id!r} is not KEYID:KEY")
            try:
                key = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            except ValueError:
                key = b""
            if len(key) != 32:
                raise SecretKeyError(
                    f"SVC_SECRET_KEY: key {key_id!r} must be 32 bytes in base64url"
                )
            keys.append((key_id, key))
        if len({key_id for key_id, _ in keys}) != len(keys):
            raise SecretKeyError("SVC_SECRET_KEY: a key id is listed twice")
        return cls(keys)

    def seal(self, plaintext: bytes, bound_to: str) -> tuple[str, bytes]:
        """``(key id, nonce || ciphertext)`` of ``plaintext``, bound to ``bound_to``."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[self.current].encrypt(nonce, plaintext, bound_to.encode())
        return self.current, nonce + sealed

    def open(self, key_id: str, blob: bytes, bound_to: str) -> bytes:
        """The plaintext; raises SecretKeyError when the key is unknown or the data altered."""
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise SecretKeyError(f"no key {key_id!r} in SVC_SECRET_KEY to decrypt a stored secret")
        try:
            return cipher.decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], bound_to.encode())
        except InvalidTag:
            raise SecretKeyError(
                f"a secret stored for {bound_to} does not decrypt with key {key_id!r}"
            ) from None
