"""Input of the webhook endpoint routes: creation (the dashboard's form too) and change bodies
(validated alike), secret rotation and bulk recover, with Problems naming each offending
field."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from api.input.fields import (
    MAX_DESCRIPTION,
    check,
    event_types,
    instant_ms,
    json_bool,
    json_choice,
    json_int,
    optional_text,
    reject_unknown,
    webhook_url,
)
from api.problems import FieldError
from svc import destinations
from svc.signing import standard_key
from svc.webhooks.certificates import CertificateError, belongs_to, certificates, private_key
from svc.webhooks.filters import FilterError, compile_filter
from svc.webhooks.flow import DEFAULT_EXPIRE_PREVIOUS
from svc.webhooks.model import (
    MAX_HEADERS,
    MAX_RATE_LIMIT,
    SCHEMES,
    Endpoint,
    Options,
    reserved_header,
    valid_header,
)

FIELDS = {
    "url",
    "events",
    "description",
    "signature_scheme",
    "rate_limit",
    "ordered",
    "disabled",
    "headers",
    "filter",
    "client_certificate",
    "client_key",
    "server_ca",
}
MAX_EXPIRE_PREVIOUS = 7 * 86_400


@dataclass(frozen=True, slots=True)
class NewEndpoint:
    url: str
    events: list[str]
    description: str
    options: Options


def new_endpoint(body: dict[str, Any], allow_private: bool) -> NewEndpoint:
    """A creation body, of the API or the dashboard's form; only ``url`` and ``events`` are
    required."""
    errors: list[FieldError] = []
    reject_unknown(body, FIELDS, errors)
    url = webhook_url(body.get("url"), "url", errors, allow_private=allow_private)
    events = event_types(body.get("events"), "events", errors)
    description = optional_text(body.get("description"), "description", MAX_DESCRIPTION, errors)
    settings = _settings(body, errors)
    if "headers" in settings:
        settings["headers"] = tuple(settings["headers"].items())
    settings |= _tls(body, errors, url)
    check(errors)
    url, settings["url_password"] = destinations.split_password(url)
    return NewEndpoint(url, events, description, Options(**settings))


def changes(body: dict[str, Any], endpoint: Endpoint, allow_private: bool) -> dict[str, Any]:
    """A change body: the fields sent, each validated as at creation (``rate_limit: null``
    removes the limit, ``description: null`` empties it); ``replay`` (with ``disabled:
    false`` only) is kept as ``replay`` when true."""
    errors: list[FieldError] = []
    reject_unknown(body, FIELDS | {"replay"}, errors)
    found: dict[str, Any] = _settings(body, errors)
    if "replay" in body and json_bool(body["replay"], "replay", errors):
        if found.get("disabled") is not False:
            detail = "replay sends the events skipped while disabled; send it with disabled false."
            errors.append(FieldError("replay", "replay_without_enabling", detail))
        found["replay"] = True
    if "url" in body:
        before = len(errors)
        url = webhook_url(body["url"], "url", errors, allow_private=allow_private)
        if len(errors) == before:
            found |= _broker_password(url, endpoint, errors)
    if "events" in body:
        found["events"] = event_types(body["events"], "events", errors)
    if "description" in body:
        text = optional_text(body["description"], "description", MAX_DESCRIPTION, errors)
        found["description"] = text
    url = found.get("url", endpoint.url)
    found |= _tls(body, errors, url if isinstance(url, str) else endpoint.url, endpoint)
    if found.get("signature_scheme") == "standard-webhooks" and not _standard(endpoint):
        detail = (
            "A secret of this endpoint was made before Standard Webhooks mode and cannot sign "
            "that way; rotate the secret first."
        )
        errors.append(FieldError("signature_scheme", "rotation_needed", detail))
    check(errors)
    return found


def _broker_password(url: str, endpoint: Endpoint, errors: list[FieldError]) -> dict[str, Any]:
    """A changed URL without its password, and the password (None: none). A RabbitMQ URL sent
    back as the API shows it (``destinations.MASK`` for its password) keeps the stored password,
    but only for the same broker and user: nobody may point the stored one at another broker."""
    if not destinations.masked(url):
        bare, password = destinations.split_password(url)
        return {"url": bare, "url_password": password}
    if endpoint.url_password is not None and destinations.keeps_password(endpoint.url, url):
        return {"url": destinations.split_password(url)[0]}
    detail = (
        "Send the broker's password: the stored one is kept only while the scheme, host, port "
        "and user stay the same."
    )
    errors.append(FieldError("url", "password_required", detail))
    return {}


def _standard(endpoint: Endpoint) -> bool:
    """Whether every secret signing now (a rotation's previous one too) is base64."""
    now_ms = int(time.time() * 1000)
    return all(standard_key(secret) is not None for secret in endpoint.signing_secrets(now_ms))


def _settings(body: dict[str, Any], errors: list[FieldError]) -> dict[str, Any]:
    """The delivery settings sent: scheme, rate limit, ordering, disabled, custom headers and
    payload filter (``null`` removes either)."""
    found: dict[str, Any] = {}
    if "headers" in body:
        found["headers"] = _headers(body["headers"], errors)
    if "filter" in body:
        found["filter"] = _filter(body["filter"], errors)
    if "signature_scheme" in body:
        scheme = json_choice(body["signature_scheme"], "signature_scheme", SCHEMES, errors)
        found["signature_scheme"] = scheme
    if body.get("rate_limit") is not None:
        found["rate_limit"] = json_int(body["rate_limit"], "rate_limit", 1, MAX_RATE_LIMIT, errors)
    elif "rate_limit" in body:
        found["rate_limit"] = None
    for name in ("ordered", "disabled"):
        if name in body:
            found[name] = json_bool(body[name], name, errors)
    return found


def _headers(value: Any, errors: list[FieldError]) -> dict[str, str]:
    """Custom headers: an object of at most ``MAX_HEADERS`` names to values; each refused one
    is named (``headers[Host]``)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(FieldError("headers", "invalid_type", "An object of header names to values."))
        return {}
    if len(value) > MAX_HEADERS:
        errors.append(FieldError("headers", "too_many", f"At most {MAX_HEADERS} headers."))
        return {}
    seen: set[str] = set()
    for name, text in value.items():
        field = f"headers[{name}]"
        if not isinstance(text, str):
            errors.append(FieldError(field, "invalid_type", "A header value is a string."))
        elif reserved_header(name):
            detail = f"{name} is set by the delivery itself; it cannot be replaced."
            errors.append(FieldError(field, "reserved_header", detail))
        elif not valid_header(name, text):
            detail = (
                "A header name is an HTTP token; a value is printable ASCII, without line "
                "breaks, at most 1,000 characters."
            )
            errors.append(FieldError(field, "invalid_header", detail))
        elif name.lower() in seen:
            errors.append(FieldError(field, "duplicate", "Named twice (names ignore case)."))
        seen.add(name.lower())
    return dict(value)


def _filter(value: Any, errors: list[FieldError]) -> dict[str, Any] | None:
    """A payload filter, checked as the dispatcher will evaluate it (``null``: none)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        detail = 'An object of paths to values or operators, such as {"data.amount": 5}.'
        errors.append(FieldError("filter", "invalid_type", detail))
        return None
    try:
        compile_filter(value)
    except FilterError as bad:
        field = "filter" + "".join(f"[{key}]" for key in bad.where)
        errors.append(FieldError(field, "invalid_filter", bad.detail))
    return value


def _tls(
    body: dict[str, Any], errors: list[FieldError], url: str, endpoint: Endpoint | None = None
) -> dict[str, Any]:
    """The client certificate, its key and the server's CA bundle sent (``client_certificate:
    null`` removes the certificate and its key together, ``server_ca: null`` the bundle);
    each checked as the dispatcher will load it, and only for an https URL."""
    found: dict[str, Any] = {}
    chain = _pem(body, "client_certificate", errors)
    key = _pem(body, "client_key", errors)
    if "client_certificate" in body and body["client_certificate"] is None:
        found |= {"client_certificate": None, "client_key": None}
        if key:
            detail = "A key goes with a certificate; send both, or neither."
            errors.append(FieldError("client_key", "invalid", detail))
    elif chain is not None or key is not None:
        first = _first_certificate(chain, errors) if chain is not None else None
        secret = _private_key(key, errors) if key is not None else None
        if chain is None:
            detail = "Send the certificate the key belongs to."
            errors.append(FieldError("client_certificate", "required", detail))
        elif key is None:
            errors.append(FieldError("client_key", "required", "Send the certificate's key."))
        elif first is not None and secret is not None:
            if belongs_to(secret, first):
                found |= {"client_certificate": chain, "client_key": key}
            else:
                detail = "The key is not the client certificate's."
                errors.append(FieldError("client_key", "key_mismatch", detail))
    if "server_ca" in body:
        bundle = _pem(body, "server_ca", errors)
        found["server_ca"] = bundle
        if bundle is not None:
            try:
                certificates(bundle)
            except CertificateError as bad:
                errors.append(FieldError("server_ca", "invalid_certificate", str(bad)))
    kept = endpoint is not None and (endpoint.client_certificate or endpoint.server_ca)
    wanted = any(found.get(name) for name in ("client_certificate", "server_ca")) or (
        kept and found.get("client_certificate", True) is not None
    )
    if wanted and not url.startswith(("https://", "amqps://")):
        detail = "Client certificates and server_ca need an https or amqps URL."
        errors.append(FieldError("url", "https_required", detail))
    return found


def _pem(body: dict[str, Any], name: str, errors: list[FieldError]) -> str | None:
    value = body.get(name)
    if value is None or isinstance(value, str):
        return value
    errors.append(FieldError(name, "invalid_type", "A PEM text."))
    return None


def _first_certificate(chain: str, errors: list[FieldError]) -> x509.Certificate | None:
    try:
        return certificates(chain)[0]
    except CertificateError as bad:
        errors.append(FieldError("client_certificate", "invalid_certificate", str(bad)))
        return None


def _private_key(key: str, errors: list[FieldError]) -> PrivateKeyTypes | None:
    try:
        return private_key(key)
    except CertificateError as bad:
        errors.append(FieldError("client_key", "invalid_key", str(bad)))
        return None


def expire_previous_in(body: dict[str, Any]) -> int:
    """Seconds the replaced secret keeps signing after a rotation (0: none)."""
    errors: list[FieldError] = []
    reject_unknown(body, {"expire_previous_in"}, errors)
    seconds = DEFAULT_EXPIRE_PREVIOUS
    if body.get("expire_previous_in") is not None:
        value = body["expire_previous_in"]
        seconds = json_int(value, "expire_previous_in", 0, MAX_EXPIRE_PREVIOUS, errors)
    check(errors)
    return seconds


def since_ms(body: dict[str, Any]) -> int:
    """``since`` of a recover request: an ISO 8601 time with its offset, in milliseconds."""
    errors: list[FieldError] = []
    reject_unknown(body, {"since"}, errors)
    value = body.get("since")
    ms = None
    if value is None:
        errors.append(FieldError("since", "required", "Send the time to recover from."))
    elif not isinstance(value, str):
        errors.append(FieldError("since", "invalid_type", "Must be a string."))
    else:
        ms = instant_ms(value)
        if ms is None:
            detail = "An ISO 8601 time with its offset, such as 2026-11-21T08:00:00Z."
            errors.append(FieldError("since", "invalid_time", detail))
    check(errors)
    assert ms is not None
    return ms
