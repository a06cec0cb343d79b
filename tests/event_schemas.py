"""Checks a delivery against the OpenAPI document's ``webhooks``: its body with JSON Schema
2020-12 (references resolved in the document's components) and its headers."""

from __future__ import annotations

from typing import Any

import orjson
from jsonschema import Draft202012Validator

from api.description import document
from harness.receivers import Received


def body_schema(doc: dict[str, Any], event_type: str) -> dict[str, Any]:
    """The request body schema of ``event_type``'s webhook, with the document's components so
    that its ``#/components/...`` references resolve."""
    operation = doc["webhooks"][event_type]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    return {**schema, "components": doc["components"]}


def delivery_errors(request: Received) -> list[str]:
    """Every way ``request`` differs from its webhook's description; empty when it matches."""
    doc = document()
    body = orjson.loads(request.body)
    validator = Draft202012Validator(
        body_schema(doc, body["type"]), format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    errors = [f"{body['type']} body: {e.message}" for e in validator.iter_errors(body)]
    headers = {name.lower(): value for name, value in request.headers.items()}
    for parameter in doc["webhooks"][body["type"]]["post"]["parameters"]:
        value = headers.get(parameter["name"].lower())
        if value is None:
            if parameter["required"]:
                errors.append(f"header {parameter['name']} missing")
            continue
        header = Draft202012Validator(parameter["schema"])
        errors += [f"header {parameter['name']}: {e.message}" for e in header.iter_errors(value)]
    return errors
