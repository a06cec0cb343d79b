"""Description of the partner routes (api/routes/organisations.py)."""

from __future__ import annotations

from api.description.shapes import list_of
from api.openapi import (
    OPAQUE_CURSOR,
    TIMESTAMP,
    Json,
    id_of,
    json_content,
    obj,
    ok,
    page_query,
    problem,
    ref,
    v1,
    v1_post,
)
from api.routes.organisations import MAX_NAME
from svc.payments import CURRENCIES

TAG = "Partners"
PARTNER_ONLY = problem("The key's organisation is not a partner (partner_only).")


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


def paths() -> Json:
    return {
        "/v1/organisations": {
            "post": v1_post(
                {
                    "operationId": "create_organisation",
                    "tags": [TAG],
                    "summary": "Partners: create a connected organisation with its API keys",
                    "requestBody": {
                        "required": True,
                        "content": json_content(ref("OrganisationCreate")),
                    },
                    "responses": {
                        **ok("OrganisationCreated", "Created; api_keys shown only here.", "201"),
                        "403": PARTNER_ONLY,
                    },
                },
                "415",
            ),
            "get": v1(
                {
                    "operationId": "list_organisations",
                    "tags": [TAG],
                    "summary": "Partners: list connected organisations",
                    "parameters": page_query(OPAQUE_CURSOR),
                    "responses": {
                        **ok("OrganisationList", "A page of organisations."),
                        "403": PARTNER_ONLY,
                    },
                },
                "422",
            ),
        },
        "/v1/partner/earnings": {
            "get": v1(
                {
                    "operationId": "list_partner_earnings",
                    "tags": [TAG],
                    "summary": "Partners: commissions by month and organisation",
                    "parameters": page_query(OPAQUE_CURSOR),
                    "responses": {
                        **ok("EarningList", "A page of earnings."),
                        "403": PARTNER_ONLY,
                    },
                },
                "422",
            ),
        },
    }
