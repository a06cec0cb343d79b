"""Client certificates of endpoints (mTLS): the rules a certificate chain, its private key and
a CA bundle must meet, read with ``cryptography``.

A chain is one or more PEM certificates, the endpoint's own first; the key is an unencrypted
PEM private key (the dispatcher has no one to ask for a passphrase) whose public half is the
first certificate's; a CA bundle is one or more PEM certificates. Each is bounded in size.
"""

from __future__ import annotations

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

MAX_PEM = 32_768
"""Characters of a certificate chain, key or CA bundle."""


class CertificateError(ValueError):
    """A PEM that cannot be used, and why (for the Problem's detail)."""


def certificates(pem: str) -> list[x509.Certificate]:
    """The certificates of ``pem``, in order; ``CertificateError`` when there is none or one
    does not parse."""
    if len(pem) > MAX_PEM:
        raise CertificateError(f"At most {MAX_PEM} characters.")
    try:
        found = x509.load_pem_x509_certificates(pem.encode())
    except ValueError:
        found = []
    if not found:
        raise CertificateError("One or more PEM certificates (-----BEGIN CERTIFICATE-----).")
    return found


def private_key(pem: str) -> PrivateKeyTypes:
    """The unencrypted private key of ``pem``; ``CertificateError`` when it is unusable."""
    if len(pem) > MAX_PEM:
        raise CertificateError(f"At most {MAX_PEM} characters.")
    try:
        return serialization.load_pem_private_key(pem.encode(), password=None)
    except TypeError:  # encrypted
        raise CertificateError("The key is encrypted; send it unencrypted.") from None
    except (ValueError, UnsupportedAlgorithm):
        raise CertificateError("A PEM private key (-----BEGIN PRIVATE KEY-----).") from None


def belongs_to(key: PrivateKeyTypes, certificate: x509.Certificate) -> bool:
    """Whether ``key`` is the private half of ``certificate``'s public key."""
    raw = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    return key.public_key().public_bytes(der, raw) == certificate.public_key().public_bytes(
        der, raw
    )


def summary(pem: str | None) -> tuple[str, str] | None:
    """The first certificate's subject and end of validity (ISO), for the dashboard; None
    when there is none or it does not parse."""
    if pem is None:
        return None
    try:
        first = certificates(pem)[0]
    except CertificateError:
        return None
    return first.subject.rfc4514_string(), first.not_valid_after_utc.isoformat()
