"""Reading request input: JSON and form bodies, URLs, event types and pagination, as Problems
on error."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError
from multidict import MultiDictProxy

from api.input.numbers import whole_number
from api.problems import FieldError, InvalidInput, Problem
from svc import destinations
from svc.addresses import always_blocked
from svc.envelope import EVENT_TYPES

MAX_URL_LENGTH = 2048
EVENT_TYPES_PAGE = "Event types in the documentation, docs/api/event-types.md"
MAX_DESCRIPTION = 500
MAX_PAGE = 100
LATEST_MS = 253_402_300_799_000  # 9999-12-31T23:59:59Z, the last second datetime can hold


async def json_object(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object; wrong content type or malformed JSON is a Problem."""
    if request.content_type != "application/json":
        raise Problem(415, "unsupported_media_type", "Send the body as application/json.")
    try:
        raw = await request.read()
    except RequestPayloadError:  # a body its Content-Encoding does not decode
        raise Problem(400, "invalid_json", "The body cannot be decoded.") from None
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise Problem(400, "invalid_json", f"The body is not valid JSON: {exc}.") from None
    if not isinstance(body, dict):
        raise Problem(400, "invalid_json", "The body must be a JSON object.")
    return body


_UNREADABLE_FORM = (
    ValueError,  # a broken multipart body; bytes the charset cannot decode
    LookupError,  # an unknown charset
    AssertionError,  # a multipart part without a name (older aiohttp asserts it has one)
    RuntimeError,  # a part's unknown Content-Transfer-Encoding
    HttpProcessingError,  # a malformed part header
    RequestPayloadError,  # a body its Content-Encoding does not decode
)
"""What aiohttp's ``post()`` raises for a form body it cannot read."""


async def optional_json(request: web.Request) -> dict[str, Any]:
    """The JSON object body, or an empty one when the request has no body at all."""
    if not request.body_exists:
        return {}
    return await json_object(request)


async def form_fields(
    request: web.Request,
) -> MultiDictProxy[str | bytes | bytearray | web.FileField]:
    """The form body, for every front door that reads forms; one that cannot be read is a
    400 ``invalid_form`` Problem (an error page on the dashboard), never a 500."""
    try:
        return await request.post()
    except _UNREADABLE_FORM as exc:
        detail = f"The form body cannot be read ({type(exc).__name__})."
        raise Problem(400, "invalid_form", detail) from None


def reject_unknown(body: dict[str, Any], allowed: set[str], errors: list[FieldError]) -> None:
    for name in sorted(set(body) - allowed):
        detail = f"'{name}' is not a field of this request."
        errors.append(FieldError(name, "unknown_field", detail))


def http_url(value: Any, field: str, errors: list[FieldError]) -> str:
    """An http:// or https:// URL with a valid host and port and no credentials (a shop's
    ``success_url``, which the customer's browser opens: any host will do)."""
    _url_host(value, field, errors)
    return value if isinstance(value, str) else ""


def webhook_url(value: Any, field: str, errors: list[FieldError], *, allow_private: bool) -> str:
    """A delivery target: an ``http_url``, or a RabbitMQ destination (``amqp[s]://``), whose
    host deliveries can reach. A host they always
    refuse (a non-public IP literal, ``localhost``) is ``private_target``, unless
    ``SVC_ALLOW_PRIVATE_TARGETS``; host names are checked again after DNS at delivery."""
    if isinstance(value, str) and destinations.is_broker(value) and len(value) <= MAX_URL_LENGTH:
        host = _broker_host(value, field, errors)
    else:
        host = _url_host(value, field, errors, amqp=True)
    if host is not None and not allow_private and always_blocked(host):
        detail = (
            "Deliveries never go to localhost or to a loopback, private, link-local or other "
            "non-public address; use a public host."
        )
        errors.append(FieldError(field, "private_target", detail))
    return value if isinstance(value, str) else ""


UNPRINTABLE = "Spaces and control characters are not allowed in a URL; percent-encode them."


def _unprintable(url: str) -> bool:
    return any(c.isspace() for c in url) or not url.isprintable()


def _broker_host(value: str, field: str, errors: list[FieldError]) -> str | None:
    """The host of a well-formed RabbitMQ destination URL (``svc.destinations``);
    otherwise None, with the reason in ``errors``."""
    if _unprintable(value):
        errors.append(FieldError(field, "invalid_url", UNPRINTABLE))
        return None
    wrong = destinations.problem(value)
    if wrong is not None:
        errors.append(FieldError(field, "invalid_url", wrong))
        return None
    return urlsplit(value).hostname


def _url_host(
    value: Any, field: str, errors: list[FieldError], *, amqp: bool = False
) -> str | None:
    """The host of a well-formed http(s) URL; otherwise None, with the reason in ``errors``
    (``amqp``: the reason names the RabbitMQ schemes too)."""
    if value is None:
        errors.append(FieldError(field, "required", "A URL is required."))
        return None
    if not isinstance(value, str):
        errors.append(FieldError(field, "invalid_type", "The URL must be a string."))
        return None
    if len(value) > MAX_URL_LENGTH:
        errors.append(FieldError(field, "too_long", f"At most {MAX_URL_LENGTH} characters."))
        return None
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https"):
        schemes = "http://, https://, amqp:// or amqps://" if amqp else "http:// or https://"
        detail = f"The URL must start with {schemes}."
        errors.append(FieldError(field, "unsupported_scheme", detail))
    elif _unprintable(value):
        errors.append(FieldError(field, "invalid_url", UNPRINTABLE))
    elif not parts.hostname or not port_ok:
        errors.append(FieldError(field, "invalid_url", "The URL needs a valid host (and port)."))
    elif parts.username or parts.password:
        errors.append(FieldError(field, "invalid_url", "The URL must not carry credentials."))
    else:
        return parts.hostname
    return None


def unknown_event_type(field: str, name: str) -> FieldError:
    """The field error of a name that is no event type: it names the types and their page."""
    return FieldError(
        field,
        "unknown_event_type",
        f"'{name}' is not an event type; the types are {', '.join(EVENT_TYPES)} "
        f"(see {EVENT_TYPES_PAGE}).",
    )


def event_types(value: Any, field: str, errors: list[FieldError]) -> list[str]:
    if value is None:
        errors.append(FieldError(field, "required", "List the event types to subscribe to."))
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(FieldError(field, "invalid_type", "Send an array of event type names."))
        return []
    if not value:
        errors.append(FieldError(field, "empty", "Subscribe to at least one event type."))
    for index, name in enumerate(value):
        if name not in EVENT_TYPES:
            errors.append(unknown_event_type(f"{field}[{index}]", name))
    if len(set(value)) != len(value):
        errors.append(FieldError(field, "duplicate", "An event type is listed more than once."))
    return list(dict.fromkeys(value))


def optional_text(value: Any, field: str, limit: int, errors: list[FieldError]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append(FieldError(field, "invalid_type", "Must be a string."))
        return ""
    if len(value) > limit:
        errors.append(FieldError(field, "too_long", f"At most {limit} characters."))
    if "\x00" in value:
        errors.append(FieldError(field, "invalid_character", "Text cannot hold U+0000 (NUL)."))
    return value


def json_bool(value: Any, field: str, errors: list[FieldError]) -> bool:
    """A JSON ``true`` or ``false``; anything else (null included) is ``invalid_type``."""
    if not isinstance(value, bool):
        errors.append(FieldError(field, "invalid_type", "Must be true or false."))
        return False
    return value


def json_int(value: Any, field: str, low: int, high: int, errors: list[FieldError]) -> int:
    """A JSON integer from ``low`` to ``high``.

    As in JSON Schema, a number with no fractional part is an integer (``894.0`` is 894);
    ``1.5``, ``true`` and strings are not.
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(FieldError(field, "invalid_type", "Must be an integer."))
        return low
    if not low <= value <= high:
        errors.append(FieldError(field, "out_of_range", f"From {low:,} to {high:,}."))
        return low
    return value


def json_choice(value: Any, field: str, choices: tuple[str, ...], errors: list[FieldError]) -> str:
    """One of ``choices``; the first when the value is not one (with the error recorded)."""
    if not isinstance(value, str):
        errors.append(FieldError(field, "invalid_type", "Must be a string."))
    elif value not in choices:
        errors.append(FieldError(field, "invalid_choice", f"One of {', '.join(choices)}."))
    else:
        return value
    return choices[0]


def instant_ms(text: str) -> int | None:
    """Milliseconds since the epoch (within 1970 to 9999), or None when ``text`` is not an
    ISO 8601 time with an offset."""
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            return None
        return min(max(0, round(moment.timestamp() * 1000)), LATEST_MS)
    except (ValueError, OverflowError):
        return None


def page_params(request: web.Request) -> tuple[int, str | None]:
    """``limit`` (1–100, default 20) and ``cursor`` from the query."""
    errors: list[FieldError] = []
    limit = whole_number(request.query.get("limit", "20"), "limit", 1, MAX_PAGE, errors)
    check(errors)
    cursor = request.query.get("cursor") or None
    return limit, cursor


def check(errors: list[FieldError]) -> None:
    if errors:
        raise InvalidInput(errors)


def list_body(data: list[dict[str, Any]], next_cursor: str | None) -> dict[str, Any]:
    """A page of a list, newest first."""
    return {
        "object": "list",
        "data": data,
        "has_more": next_cursor is not None,
        "next_cursor": next_cursor,
    }
