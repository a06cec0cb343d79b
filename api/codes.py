"""The API's error codes: every Problem ``code`` with its statuses, every field-error ``code``.

``api.problems`` refuses to build a Problem or a field error with a code not listed here, the
OpenAPI description lists them as the ``enum`` of ``code``, and the tests check the Errors page's
tables and every code written in ``api/`` against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class ProblemCode:
    """A Problem's ``code``: the statuses it is answered with, and what it means."""

    statuses: frozenset[int]
    meaning: str


ANY_ERROR_STATUS = frozenset(status.value for status in HTTPStatus if status >= 400)
"""The statuses of ``http_error``: whatever the HTTP layer raises without a code of its own."""


def _status(*statuses: int) -> frozenset[int]:
    return frozenset(statuses)


PROBLEM_CODES: Mapping[str, ProblemCode] = MappingProxyType(
    {
        # 400
        "bad_request": ProblemCode(_status(400), "The HTTP layer found the request malformed."),
        "invalid_json": ProblemCode(_status(400), "The body is not a valid JSON object."),
        "invalid_form": ProblemCode(_status(400), "The form body cannot be read."),
        "idempotency_key_missing": ProblemCode(
            _status(400), "The route needs an Idempotency-Key header."
        ),
        "idempotency_key_invalid": ProblemCode(
            _status(400), "The Idempotency-Key is not 1 to 255 printable ASCII characters."
        ),
        # 401
        "missing_api_key": ProblemCode(_status(401), "No Authorization header on a /v1 route."),
        "invalid_authorization": ProblemCode(
            _status(401), "The Authorization header is not Bearer <API key>."
        ),
        "invalid_api_key": ProblemCode(_status(401), "The API key is unknown."),
        "invalid_terminal_secret": ProblemCode(
            _status(401), "A terminal connected without a valid device secret."
        ),
        # 403
        "partner_only": ProblemCode(_status(403), "Only a partner organisation's key may."),
        "permission_denied": ProblemCode(
            _status(403), "The API key lacks the permission named in permission."
        ),
        # 404
        "route_not_found": ProblemCode(_status(404), "No route matches the path."),
        "organisation_not_found": ProblemCode(
            _status(404), "Svc-Organisation names no organisation connected to the key's."
        ),
        "endpoint_not_found": ProblemCode(_status(404), "No such webhook endpoint in scope."),
        "event_not_found": ProblemCode(_status(404), "No such event in scope, or it expired."),
        "payment_not_found": ProblemCode(_status(404), "No such payment in scope."),
        "terminal_not_found": ProblemCode(_status(404), "No such terminal in scope."),
        "checkout_not_found": ProblemCode(_status(404), "The checkout link is not valid."),
        "refund_not_found": ProblemCode(_status(404), "No such refund in scope."),
        "chargeback_not_found": ProblemCode(_status(404), "No such chargeback in scope."),
        "payout_not_found": ProblemCode(_status(404), "No such payout in scope."),
        "api_key_not_found": ProblemCode(_status(404), "No such API key in scope."),
        # 405
        "method_not_allowed": ProblemCode(
            _status(405), "The route does not take this method (see Allow)."
        ),
        # 409
        "idempotency_request_in_progress": ProblemCode(
            _status(409), "The record of this Idempotency-Key changed while it was read; retry."
        ),
        "terminal_offline": ProblemCode(_status(409), "The terminal is not connected."),
        "terminal_busy": ProblemCode(_status(409), "The terminal is working on another payment."),
        "payment_not_cancelable": ProblemCode(
            _status(409), "The payment already succeeded or failed."
        ),
        "endpoint_disabled": ProblemCode(
            _status(409), "A recover or test send was asked of a disabled endpoint."
        ),
        "sandbox_only": ProblemCode(_status(409), "This exists only in the test environment."),
        "payment_not_succeeded": ProblemCode(
            _status(409), "Only succeeded payments can be refunded or charged back."
        ),
        "already_charged_back": ProblemCode(
            _status(409), "The payment has its chargeback already."
        ),
        "payment_fully_refunded": ProblemCode(
            _status(409), "The payment was refunded in full; nothing is left to charge back."
        ),
        "api_key_revoked": ProblemCode(_status(409), "A revoked API key cannot be rolled."),
        "organisation_name_taken": ProblemCode(
            _status(409), "An organisation of this name exists."
        ),
        # 413, 415
        "payload_too_large": ProblemCode(_status(413), "The body is larger than allowed."),
        "unsupported_media_type": ProblemCode(_status(415), "The body has the wrong Content-Type."),
        # 422
        "validation_error": ProblemCode(_status(422), "Inputs are invalid; errors names each."),
        "idempotency_key_reused": ProblemCode(
            _status(422), "The Idempotency-Key was used for a request with other parameters."
        ),
        "too_many_endpoints": ProblemCode(
            _status(422), "The scope has as many webhook endpoints as it may; delete one first."
        ),
        # 426, 429, 5xx
        "websocket_required": ProblemCode(_status(426), "The route speaks WebSocket only."),
        "rate_limited": ProblemCode(
            _status(429), "The API key sent more requests than its limit; see Retry-After."
        ),
        "too_many_failed_auth": ProblemCode(
            _status(429),
            "The client address sent more requests with an unknown API key than its limit; "
            "see Retry-After.",
        ),
        "too_many_streams": ProblemCode(
            _status(429), "The API key holds as many payment streams open as it may."
        ),
        "internal_error": ProblemCode(_status(500), "The server failed."),
        "service_unavailable": ProblemCode(
            _status(503),
            "PostgreSQL or Redis cannot be reached right now, or the request could not be "
            "answered within SVC_REQUEST_TIMEOUT.",
        ),
        "http_error": ProblemCode(
            ANY_ERROR_STATUS, "Any other error of the HTTP layer, with its status."
        ),
    }
)

FIELD_CODES: Mapping[str, str] = MappingProxyType(
    {
        "required": "The field is missing.",
        "unknown_field": "The request has a field the route does not take.",
        "duplicate_field": "A form field is sent more than once.",
        "invalid_type": "The value has the wrong type.",
        "too_long": "The text is longer than allowed.",
        "unsupported_scheme": "A URL does not start with http:// or https://.",
        "invalid_url": "A URL has no valid host or port, carries credentials or holds spaces.",
        "invalid_origin": "frame_origin is no https origin (nor http on a loopback host).",
        "invalid_character": "A text holds U+0000.",
        "private_target": "A webhook URL names a host deliveries never reach.",
        "empty": "events is an empty list.",
        "duplicate": "A list names an item more than once (events, emails).",
        "unknown_event_type": "An entry of events is not an event type.",
        "too_many": "A list (emails) or object (headers) has more items than allowed.",
        "reserved_header": "A custom header is one the delivery sets itself.",
        "invalid_header": "A custom header's name or value cannot be sent.",
        "invalid_filter": "A part of a payload filter is not a condition.",
        "invalid_certificate": "A client certificate or server_ca is not PEM certificates.",
        "invalid_key": "A client key is not an unencrypted PEM private key.",
        "key_mismatch": "The client key is not the client certificate's.",
        "https_required": "Client certificates and server_ca need an https or amqps URL.",
        "password_required": "A masked broker URL names another broker or user; send its password.",
        "invalid_email": "An entry of emails is not an email address.",
        "not_integer": "A number (amount, limit, wait) has decimals; it is a whole number.",
        "invalid_integer": "A number (amount, limit, wait) is not a whole number in ASCII digits.",
        "out_of_range": "A number is outside its range.",
        "unsupported_currency": "currency is not a supported currency.",
        "unsupported_channel": "channel is not online or phone.",
        "invalid_boolean": "A form boolean is not true or false.",
        "invalid_choice": "The value is not one of its choices.",
        "invalid_time": "A time (since, expires_at) is not ISO 8601 with an offset.",
        "in_the_past": "expires_at is not in the future.",
        "invalid_permission": "An item of permissions is not RESOURCE:read or RESOURCE:write.",
        "rotation_needed": "The endpoint's secret predates Standard Webhooks mode.",
        "exceeds_refundable": "A refund amount is more than is left of the payment.",
        "insufficient_funds": "A payout amount is more than is available.",
        "invalid_id": "source_id is not the id of a payment, refund, chargeback or payout, "
        "or event_id is no event id.",
        "invalid_status_code": "status_code is neither a response code (503) nor a class (5xx).",
        "replay_without_enabling": "replay is sent without disabled false.",
        "invalid": "A name, an accent colour or an Idempotency-Key is not valid.",
        "invalid_cursor": "A cursor is not one this service handed out.",
        "invalid_range": "created[lt] is not later than created[gte].",
        "reused": "The Idempotency-Key belongs to a request with other parameters.",
        "taken": "The name is taken.",
    }
)


def check_problem(status: int, code: str) -> None:
    """Refuse a Problem whose code is not listed, or not listed with this status: a bug."""
    listed = PROBLEM_CODES.get(code)
    if listed is None:
        raise ValueError(f"Problem code {code!r} is not listed in api/codes.py")
    if status not in listed.statuses:
        raise ValueError(f"Problem code {code!r} is not listed with status {status}")


def check_field(code: str) -> None:
    """Refuse a field error whose code is not listed: a bug."""
    if code not in FIELD_CODES:
        raise ValueError(f"field error code {code!r} is not listed in api/codes.py")
