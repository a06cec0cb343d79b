"""Schemas of the OpenAPI description shared by its parts: the Problem, its shared
responses, lists, WebSocket messages, event schema names."""

from __future__ import annotations

from api.codes import FIELD_CODES, PROBLEM_CODES
from api.openapi import PROBLEM_MEDIA, PROBLEMS, Json, json_content, obj, ref


def message(kind: str, properties: Json, description: str) -> Json:
    """A WebSocket text message: a JSON object whose ``type`` is ``kind``."""
    return obj({"type": {"const": kind}, **properties}, description=description)


def problem_responses() -> Json:
    """``components.responses``: one Problem response per shared status."""
    responses: Json = {}
    for status, (name, description) in PROBLEMS.items():
        response: Json = {
            "description": description,
            "content": json_content(ref("Problem"), PROBLEM_MEDIA),
        }
        if status == "401":
            response["headers"] = {
                "WWW-Authenticate": {
                    "description": 'Always Bearer realm="svc".',
                    "required": True,
                    "schema": {"type": "string"},
                }
            }
        responses[name] = response
    return responses


def event_schema_name(event_type: str) -> str:
    """``payment.succeeded`` → ``PaymentSucceeded`` (``webhook_endpoint.failing`` →
    ``WebhookEndpointFailing``), the stem of its schemas' names."""
    return "".join(part.capitalize() for part in event_type.replace("_", ".").split("."))


def list_of(item: str, description: str) -> Json:
    """The list envelope: a page of objects, newest first, and the cursor of the next page."""
    return obj(
        {
            "object": {"const": "list"},
            "data": {"type": "array", "items": ref(item)},
            "has_more": {"type": "boolean"},
            "next_cursor": {
                "type": ["string", "null"],
                "description": "Send as cursor to read the next page; null on the last page.",
            },
        },
        description=description,
    )


def problem_schemas() -> Json:
    """The Problem and its field errors; ``code`` is one of those of ``api.codes``."""
    field_error = obj(
        {
            "field": {"type": "string", "description": "The offending field, e.g. events[2]."},
            "code": {
                "type": "string",
                "enum": sorted(FIELD_CODES),
                "description": "Why it is wrong, e.g. required, too_long.",
            },
            "detail": {"type": "string"},
        }
    )
    problem = obj(
        {
            "type": {
                "type": "string",
                "format": "uri-reference",
                "description": "/problems/<code>, a reference relative to the API.",
            },
            "title": {"type": "string", "description": "The HTTP reason phrase of status."},
            "status": {"type": "integer", "minimum": 400, "maximum": 599},
            "detail": {"type": "string", "description": "What went wrong, for a person."},
            "code": {
                "type": "string",
                "pattern": "^[a-z][a-z0-9_]*$",
                "enum": sorted(PROBLEM_CODES),
                "description": "Stable machine-readable code; the docs' Errors page lists each.",
            },
            "errors": {
                "type": "array",
                "items": ref("FieldError"),
                "description": "Each offending input field (input errors only).",
            },
        },
        required=["type", "title", "status", "detail", "code"],
        description="RFC 9457 Problem Details.",
    )
    return {"Problem": problem, "FieldError": field_error}
