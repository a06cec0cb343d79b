"""Building blocks of OpenAPI operations and schemas: references, bodies, ids, pages, the
Problem responses and headers every ``/v1`` operation shares."""

from __future__ import annotations

from typing import Any

from api.input.listing import CREATED_GTE, CREATED_LT
from svc import cursors
from svc.envelope import ENVIRONMENTS

Json = dict[str, Any]

PROBLEM_MEDIA = "application/problem+json"
ID_TAIL = "[0-9a-v]{26}"  # svc.ids: 26 characters of lower-case base32hex
TIMESTAMP: Json = {
    "type": "string",
    "format": "date-time",
    "description": "ISO 8601 UTC with milliseconds, e.g. 2026-11-21T08:00:00.123Z.",
}
ENVIRONMENT: Json = {
    "type": "string",
    "enum": list(ENVIRONMENTS),
    "description": "test (sandbox) or live, from the API key.",
}
BEARER: list[Json] = [{"bearer": []}]
FORM = "application/x-www-form-urlencoded"
AMOUNT: Json = {"type": "integer", "description": "Rappen (2450 is CHF 24.50)."}
SWITCHING: Json = {"101": {"description": "Switching Protocols: the WebSocket is open."}}

# Problem responses shared by many operations, with the codes each can carry.
PROBLEMS: dict[str, tuple[str, str]] = {
    "400": ("BadRequest", "The request is malformed (invalid_json, bad_request, ...)."),
    "401": (
        "Unauthorized",
        "The API key is missing (missing_api_key), not a Bearer credential "
        "(invalid_authorization) or unknown (invalid_api_key).",
    ),
    "404": (
        "NotFound",
        "No such object in the scope of the key (route_not_found for no route; "
        "organisation_not_found for a Svc-Organisation the key may not act for).",
    ),
    "409": (
        "Conflict",
        "The request conflicts with the current state; the code says which "
        "(idempotency_request_in_progress, terminal_busy, payment_not_cancelable, "
        "payment_not_succeeded, already_charged_back, organisation_name_taken, "
        "sandbox_only, ...).",
    ),
    "413": ("PayloadTooLarge", "The body is larger than 64 KiB (payload_too_large)."),
    "415": (
        "UnsupportedMediaType",
        "The body has the wrong Content-Type (unsupported_media_type).",
    ),
    "422": ("ValidationError", "Input is invalid; errors[] names each field (validation_error)."),
    "426": ("UpgradeRequired", "Open this route as a WebSocket (websocket_required)."),
    "429": (
        "TooManyRequests",
        "A limit of the key or of the client address was reached; the code says which "
        "(too_many_streams, rate_limited, too_many_failed_auth); retry after Retry-After.",
    ),
    "500": ("InternalError", "The server failed (internal_error)."),
}


def ref(name: str) -> Json:
    return {"$ref": f"#/components/schemas/{name}"}


def id_of(prefix: str, what: str) -> Json:
    return {
        "type": "string",
        "pattern": f"^{prefix}_{ID_TAIL}$",
        "description": f"Identifier of the {what} (prefix {prefix}_).",
        "examples": [f"{prefix}_01jd3q8b5k2c7r9m4n6p0s1t2v"],
    }


def path_id(name: str, prefix: str, what: str) -> Json:
    """A path parameter that names an object; an id of another shape is simply not found."""
    return {"name": name, "in": "path", "required": True, "schema": id_of(prefix, what)}


def obj(properties: Json, required: list[str] | None = None, **extra: Any) -> Json:
    """A closed object: every property the code sends is listed, and no other."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
        **extra,
    }


def problem(description: str, **extra: Any) -> Json:
    """A Problem response of one operation alone (its codes differ from the shared one)."""
    return {
        "description": description,
        "content": json_content(ref("Problem"), PROBLEM_MEDIA),
        **extra,
    }


def json_content(schema: Json, media: str = "application/json") -> Json:
    return {media: {"schema": schema}}


def created(schema_name: str, description: str, location: str) -> Json:
    """A 201 answering the new object, with its ``Location`` (described as ``location``)."""
    answer = ok(schema_name, description, "201")
    answer["201"]["headers"] = {"Location": {"description": location, "schema": {"type": "string"}}}
    return answer


def created_payment(description: str) -> Json:
    """A 201 answering the new payment, with its ``Location``."""
    return created("Payment", description, "/v1/payments/{id} of the new payment.")


def form_body(schema_name: str) -> Json:
    """An optional form body: the fields of ``schema_name``, or none at all."""
    return {"required": False, "content": {FORM: {"schema": ref(schema_name)}}}


def ok(schema_name: str, description: str, status: str = "200") -> Json:
    return {status: {"description": description, "content": json_content(ref(schema_name))}}


def problems(*statuses: str) -> Json:
    """References to shared Problem responses; every /v1 operation can answer 401, 429 (a
    key's rate, an address's failed authentications) and 500."""
    return {
        status: {"$ref": f"#/components/responses/{PROBLEMS[status][0]}"}
        for status in sorted(statuses)
    }


ACTING_FOR: Json = {
    "name": "Svc-Organisation",
    "in": "header",
    "required": False,
    "description": (
        "A partner's key acts for one of its connected organisations (same environment). "
        "Any other value is a 404 organisation_not_found."
    ),
    "schema": {"type": "string", "pattern": f"^org_{ID_TAIL}$"},
}


def v1(operation: Json, *statuses: str) -> Json:
    """An operation under /v1: Bearer security, the partner's ``Svc-Organisation`` header,
    and its Problem responses."""
    responses = {**operation["responses"], **problems("401", "404", "429", "500", *statuses)}
    parameters = [*operation.get("parameters", []), ACTING_FOR]
    return {
        **operation,
        "parameters": parameters,
        "security": BEARER,
        "responses": dict(sorted(responses.items())),
    }


def v1_post(operation: Json, *statuses: str, key_required: bool = False) -> Json:
    """A POST under /v1: it honours ``Idempotency-Key`` (and may require it)."""
    key: Json = {
        "name": "Idempotency-Key",
        "in": "header",
        "required": key_required,
        "description": (
            "Makes a retry safe: the first response is kept 24 h and replayed for the same "
            "request with the same API key; the same key with other parameters is 422 "
            "idempotency_key_reused. Another API key's requests never replay it."
        ),
        "schema": {"type": "string", "pattern": "^[!-~]([ -~]{0,253}[!-~])?$"},
    }
    replayed: Json = {
        "Idempotent-Replayed": {
            "description": "true when this is the stored response of an earlier request.",
            "schema": {"type": "string", "const": "true"},
        }
    }
    for status, response in operation["responses"].items():
        if status.startswith("2"):
            response["headers"] = {**response.get("headers", {}), **replayed}
    operation = {**operation, "parameters": [*operation.get("parameters", []), key]}
    return v1(operation, "400", "409", "413", "422", *statuses)


OPAQUE_CURSOR: Json = {
    "type": "string",
    "pattern": f"^[A-Za-z0-9_-]{{0,{cursors.MAX_LENGTH}}}$",
    "maxLength": cursors.MAX_LENGTH,
    "description": (
        "next_cursor of the previous page, passed back as it was given (its content means "
        "nothing outside the service); empty for the first page. Any other value is a 422."
    ),
}


def page_query(cursor: Json) -> list[Json]:
    return [
        {
            "name": "limit",
            "in": "query",
            "required": False,
            "description": "Page size.",
            "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        },
        {
            "name": "cursor",
            "in": "query",
            "required": False,
            "description": "next_cursor of the previous page.",
            "schema": cursor,
        },
    ]


INSTANT: Json = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "string", "pattern": "^[0-9]{1,12}$"},
    ],
    "description": "An ISO 8601 time with its offset (2026-11-21T08:00:00Z) or unix seconds.",
    "examples": ["2026-11-21T08:00:00Z", "1763712000"],
}


def created_query() -> list[Json]:
    """The ``created`` range of a list: either end optional, ``created[lt]`` after
    ``created[gte]`` (else 422 invalid_range)."""
    return [
        {
            "name": CREATED_GTE,
            "in": "query",
            "required": False,
            "description": "Only objects created at or after this time.",
            "schema": INSTANT,
        },
        {
            "name": CREATED_LT,
            "in": "query",
            "required": False,
            "description": "Only objects created before this time; later than created[gte].",
            "schema": INSTANT,
        },
    ]
