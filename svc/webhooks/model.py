"""A webhook endpoint, its API view, and the settings an endpoint's owner may change."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from svc import destinations
from svc.envelope import iso_ms
from svc.orgs.model import Scope

SCHEMES = ("svc", "standard-webhooks")
"""``svc``: the ``Svc-Signature`` header; ``standard-webhooks``: ``webhook-id``,
``webhook-timestamp`` and ``webhook-signature`` as the Standard Webhooks specification says."""
DISABLED_MANUALLY = "manual"
"""``disabled_reason`` of an endpoint its owner turned off."""
DISABLED_FAILING = "failing"
"""``disabled_reason`` of an endpoint whose every attempt failed for
``SVC_ENDPOINT_DISABLE_AFTER``."""
MAX_RATE_LIMIT = 10_000
"""Most deliveries per second an endpoint's ``rate_limit`` may name."""
EDITABLE = (
    "url",
    "events",
    "description",
    "rate_limit",
    "ordered",
    "signature_scheme",
    "filter",
    "client_certificate",
    "server_ca",
)
"""Fields written as given by a change (``disabled`` and ``headers`` have rules of their
own)."""
MAX_HEADERS = 20
"""Most custom headers an endpoint carries."""
MAX_HEADER_NAME = 100
MAX_HEADER_VALUE = 1000
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
        "expect",
        "proxy-authorization",
        "proxy-authenticate",
        "user-agent",
    }
)
"""Header names a delivery sets itself or that would break it (hop-by-hop, framing)."""
RESERVED_PREFIXES = ("svc-", "webhook-")
"""The service's own headers and its signature headers (``Svc-Signature``, ``webhook-*``)."""
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""A header name (RFC 9110 token)."""


def reserved_header(name: str) -> bool:
    """Whether a custom header would replace one the delivery sets itself."""
    lower = name.lower()
    return lower in RESERVED_HEADERS or lower.startswith(RESERVED_PREFIXES)


def valid_header(name: str, value: str) -> bool:
    """Whether a custom header can be sent as written: a token of a name, and a value of
    printable ASCII (no line breaks) within the bounds."""
    return (
        len(name) <= MAX_HEADER_NAME
        and HEADER_NAME.fullmatch(name) is not None
        and len(value) <= MAX_HEADER_VALUE
        and value.isascii()
        and value.isprintable()
    )


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A stored endpoint; its secrets never leave the service after they were made."""

    id: str
    org: str
    env: str
    url: str
    events: tuple[str, ...]
    secret: str
    description: str
    created_ms: int
    previous_secret: str | None = None
    """The secret before the last rotation, still signing until ``previous_secret_expires_ms``."""
    previous_secret_expires_ms: int | None = None
    signature_scheme: str = "svc"
    rate_limit: int | None = None
    """Deliveries per second at most, across every dispatcher; None: no limit."""
    ordered: bool = False
    """Events reach the endpoint one at a time, in creation order."""
    disabled: bool = False
    """No new jobs go to the endpoint; its events are still stored (a recover sends them)."""
    disabled_reason: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    """Added to every delivery (``header_problem`` says which may not)."""
    filter: dict[str, Any] | None = None
    """The condition on the envelope an event must meet to be sent (``svc.webhooks.filters``);
    None: every event of the subscribed types."""
    client_certificate: str | None = None
    """The certificate chain (PEM) presented to the endpoint's server (mTLS)."""
    client_key: str | None = None
    """Its private key (PEM): stored sealed, never shown."""
    server_ca: str | None = None
    """CA certificates (PEM) trusted for the endpoint's server instead of the system's."""
    url_password: str | None = None
    """The password of a RabbitMQ destination's URL (``svc.destinations``): kept out of
    ``url``, stored sealed, shown masked."""

    def signing_secrets(self, now_ms: int) -> tuple[str, ...]:
        """The secrets deliveries are signed with at ``now_ms``, the newest first."""
        expires = self.previous_secret_expires_ms
        if self.previous_secret is None or expires is None or now_ms >= expires:
            return (self.secret,)
        return (self.secret, self.previous_secret)

    @property
    def shown_url(self) -> str:
        """The URL as shown to people: a RabbitMQ destination's password masked."""
        return destinations.shown(self.url, self.url_password)

    def public(self) -> dict[str, Any]:
        """The API view: everything but the secrets and the organisation id."""
        expires = self.previous_secret_expires_ms
        return {
            "id": self.id,
            "object": "webhook_endpoint",
            "url": self.shown_url,
            "events": list(self.events),
            "description": self.description,
            "environment": self.env,
            "signature_scheme": self.signature_scheme,
            "rate_limit": self.rate_limit,
            "ordered": self.ordered,
            "disabled": self.disabled,
            "disabled_reason": self.disabled_reason,
            "headers": dict(self.headers),
            "filter": self.filter,
            "client_certificate": self.client_certificate,
            "client_key_set": self.client_key is not None,
            "server_ca": self.server_ca,
            "previous_secret_expires_at": None
            if self.previous_secret is None or expires is None
            else iso_ms(expires),
            "created_at": iso_ms(self.created_ms),
        }


@dataclass(frozen=True, slots=True)
class Options:
    """What an endpoint is created with besides its URL, events and description."""

    signature_scheme: str = "svc"
    rate_limit: int | None = None
    ordered: bool = False
    disabled: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    filter: dict[str, Any] | None = None
    client_certificate: str | None = None
    client_key: str | None = None
    server_ca: str | None = None
    url_password: str | None = None


@dataclass(frozen=True, slots=True)
class Disabled:
    """An endpoint just disabled, with its scope (to announce the change) and URL (to tell
    its organisation)."""

    id: str
    scope: Scope
    url: str
