"""The partner's objects (connected organisations, earnings), in the OpenAPI description."""

from __future__ import annotations

from api.description.shapes import list_of
from api.openapi import (
    TIMESTAMP,
    Json,
    id_of,
    obj,
)
from api.routes.organisations import MAX_NAME
from svc.payments import CURRENCIES


def _organisation() -> Json:
    return {
        "id": id_of("org", "organisation"),
        "object": {"const": "organisation"},
        "name": {"type": "string"},
        "partner_id": {
            "type": ["string", "null"],
            "description": "The partner that created it.",
        },
        "created_at": TIMESTAMP,
    }


def schemas() -> Json:
    keys = obj(
        {
            "test": {"type": "string", "pattern": "^svc_test_"},
            "live": {"type": "string", "pattern": "^svc_live_"},
        },
        description="One key per environment; shown in this response only.",
    )
    return {
        "Organisation": obj(_organisation(), description="An organisation of the partner."),
        "OrganisationCreate": obj(
            {
                "name": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_NAME,
                    "pattern": "[^\\s]",
                    "description": "Unique among all organisations; printable characters.",
                }
            },
            examples=[{"name": "Bäckerei Müller AG"}],
        ),
        "OrganisationCreated": obj(
            {**_organisation(), "api_keys": keys},
            description="The new organisation with its API keys.",
        ),
        "OrganisationList": list_of("Organisation", "Organisations, newest first."),
        "Earning": obj(
            {
                "organisation_id": id_of("org", "organisation"),
                "month": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"},
                "currency": {"type": "string", "enum": list(CURRENCIES)},
                "amount": {
                    "type": "integer",
                    "description": "Commissions, Rappen: 10 % of the percentage part of fees.",
                },
            },
            description="What the partner earned on one organisation in one month (UTC).",
        ),
        "EarningList": list_of("Earning", "Earnings, newest month first."),
    }
