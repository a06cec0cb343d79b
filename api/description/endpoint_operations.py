"""The webhook endpoint's settings and the forms of its operations (change, secret rotation,
recover), in the OpenAPI description; ``api.description.webhooks`` includes them."""

from __future__ import annotations

from api.input.endpoints import MAX_EXPIRE_PREVIOUS
from api.openapi import TIMESTAMP, Json, id_of, obj
from svc.webhooks.certificates import MAX_PEM
from svc.webhooks.filters import MAX_NODES, MAX_PATH
from svc.webhooks.flow import DEFAULT_EXPIRE_PREVIOUS, RECOVER_LIMIT
from svc.webhooks.model import (
    DISABLED_FAILING,
    DISABLED_MANUALLY,
    MAX_HEADER_NAME,
    MAX_HEADER_VALUE,
    MAX_HEADERS,
    MAX_RATE_LIMIT,
    SCHEMES,
)

SIGNATURE_SCHEME: Json = {
    "type": "string",
    "enum": list(SCHEMES),
    "description": (
        "svc: the Svc-Signature header. standard-webhooks: webhook-id, webhook-timestamp and "
        "webhook-signature as the Standard Webhooks specification says."
    ),
}
RATE_LIMIT: Json = {
    "type": ["integer", "null"],
    "minimum": 1,
    "maximum": MAX_RATE_LIMIT,
    "description": "Most deliveries per second to this endpoint, across the service; null: none.",
}
ORDERED: Json = {
    "type": "boolean",
    "description": (
        "Events reach the endpoint one at a time in creation order; a failing event holds "
        "later ones until it succeeds or is exhausted."
    ),
}
DISABLED: Json = {
    "type": "boolean",
    "description": (
        "A disabled endpoint gets no deliveries; its events are still stored, and a recover "
        "sends them once it is enabled again. false turns it on and clears disabled_reason."
    ),
}

HEADERS: Json = {
    "type": ["object", "null"],
    "maxProperties": MAX_HEADERS,
    "propertyNames": {"maxLength": MAX_HEADER_NAME, "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"},
    "additionalProperties": {
        "type": "string",
        "maxLength": MAX_HEADER_VALUE,
        "pattern": "^[ -~]*$",
        "description": "Printable ASCII, without line breaks.",
    },
    "description": (
        "Headers added to every delivery, name to value, stored encrypted; null or {} for "
        "none. Refused (reserved_header): Host, Content-Length, Content-Type, "
        "Transfer-Encoding, Connection and the other hop-by-hop headers, User-Agent, and any "
        "Svc-* or webhook-* header."
    ),
    "examples": [{"Authorization": "Bearer rcv_4f9d2c", "X-Tenant": "bakery"}],
}
FILTER: Json = {
    "type": ["object", "null"],
    # A key is $and, $or or a dotted path of non-empty names.
    "propertyNames": {"pattern": r"^(\$and|\$or|[^.$][^.]*(\.[^.]+)*)$", "maxLength": MAX_PATH},
    "description": (
        "A condition on the event's envelope; only events that meet it are sent, the others "
        "are not attempted (and not failures). Dotted paths (data.amount) map to a value "
        "(equality) or to operators $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists; "
        f"$and and $or take lists of conditions; at most {MAX_NODES} parts. null: every "
        "event of the subscribed types. A bad part is 422 invalid_filter naming it."
    ),
    "examples": [
        {"data.amount": {"$gte": 10000}},
        {
            "$or": [
                {"data.terminal_id": "trm_01jd3q8b5k2c7r9m4n6p0s1t2v"},
                {"data.channel": "online"},
            ]
        },
    ],
}


# Example PEMs: a certificate for client.platform.example, its key and the CA that issued it,
# made once for the examples (no system trusts that CA; the key protects nothing). They are
# real, so an example body the description shows is one the API accepts.
PEM_CERTIFICATE = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIICPzCCAeagAwIBAgIUah890z0BpSDeA9UxvOnz3GeC7KkwCgYIKoZIzj0EAwIw\n"
    "RTEcMBoGA1UECgwTRXhhbXBsZSBSZWNlaXZlciBDQTElMCMGA1UECwwcVGVzdGlu\n"
    "ZyBDQSAjWGNLakZXME94Sl9mRy05XzAgFw0wMDAxMDEwMDAwMDBaGA8zMDAwMDEw\n"
    "MTAwMDAwMFowQjEXMBUGA1UECgwOdHJ1c3RtZSB2MS4yLjExJzAlBgNVBAsMHlRl\n"
    "c3RpbmcgY2VydCAjM2N6SURPeFF6N2tSYXIyZDBZMBMGByqGSM49AgEGCCqGSM49\n"
    "AwEHA0IABLj3oXCyVmKYzjq7YdPHSrmKUO/Lj9cSNgfGdGo5+uRXd9MNi6Uy8KBV\n"
    "uEDbnNBpjFyCoalD3MasnVDL3ET8deSjgbQwgbEwHQYDVR0OBBYEFGXO7XrcFq7X\n"
    "0bn0cfWX5o4U4NevMAwGA1UdEwEB/wQCMAAwHwYDVR0jBBgwFoAU0veJ6O4XfRxW\n"
    "vLGvvHs7qJnVRtwwJQYDVR0RAQH/BBswGYIXY2xpZW50LnBsYXRmb3JtLmV4YW1w\n"
    "bGUwDgYDVR0PAQH/BAQDAgWgMCoGA1UdJQEB/wQgMB4GCCsGAQUFBwMCBggrBgEF\n"
    "BQcDAQYIKwYBBQUHAwMwCgYIKoZIzj0EAwIDRwAwRAIgfIYGWBiYPoqpfVFfkIvU\n"
    "Em3rypLDFNUtQ0f/BER+vGQCIHpljdrN1CfAv8+FnzVUbAcrE2E36oUdIt1IhZg7\n"
    "Rwfk\n"
    "-----END CERTIFICATE-----\n"
)

PEM_KEY = (
    "-----BEGIN EC PRIVATE KEY-----\n"
    "MHcCAQEEIP4o0pEdVt+UjaJpTO8lPKSNExepzG4p+0noq6NPBgcsoAoGCCqGSM49\n"
    "AwEHoUQDQgAEuPehcLJWYpjOOrth08dKuYpQ78uP1xI2B8Z0ajn65Fd30w2LpTLw\n"
    "oFW4QNuc0GmMXIKhqUPcxqydUMvcRPx15A==\n"
    "-----END EC PRIVATE KEY-----\n"
)

PEM_CA = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIB0zCCAXmgAwIBAgIUBCkiED0T9w4Yup9/JD2El+UUHzkwCgYIKoZIzj0EAwIw\n"
    "RTEcMBoGA1UECgwTRXhhbXBsZSBSZWNlaXZlciBDQTElMCMGA1UECwwcVGVzdGlu\n"
    "ZyBDQSAjWGNLakZXME94Sl9mRy05XzAgFw0wMDAxMDEwMDAwMDBaGA8zMDAwMDEw\n"
    "MTAwMDAwMFowRTEcMBoGA1UECgwTRXhhbXBsZSBSZWNlaXZlciBDQTElMCMGA1UE\n"
    "CwwcVGVzdGluZyBDQSAjWGNLakZXME94Sl9mRy05XzBZMBMGByqGSM49AgEGCCqG\n"
    "SM49AwEHA0IABBYzzniu12pUMZk0VicnY2NbQ0WeCOMa9kVIZBHQnZBAXg7fLmEC\n"
    "Taczc1gAwXv1x6UaiM+T9HM1wioHUu7AhH2jRTBDMB0GA1UdDgQWBBTS94no7hd9\n"
    "HFa8sa+8ezuomdVG3DASBgNVHRMBAf8ECDAGAQH/AgEJMA4GA1UdDwEB/wQEAwIB\n"
    "hjAKBggqhkjOPQQDAgNIADBFAiEAjiSh/o25HxCg3ODki4Qcbe24EX7UjjBuFZC+\n"
    "ddgP9/sCIF39iGn0W/D+QYM3PJraa3eIEuzYRU7qxSmsDOUkwUcf\n"
    "-----END CERTIFICATE-----\n"
)


CLIENT_CERTIFICATE: Json = {
    "type": ["string", "null"],
    "maxLength": MAX_PEM,
    "description": (
        "PEM certificate chain (the endpoint's own certificate first) the dispatcher presents "
        "to the endpoint's server (mTLS); sent with client_key. null removes it and its key. "
        "https and amqps URLs only (https_required)."
    ),
    "examples": [PEM_CERTIFICATE],
}
CLIENT_KEY: Json = {
    "type": ["string", "null"],
    "maxLength": MAX_PEM,
    "writeOnly": True,
    "description": (
        "The client certificate's unencrypted PEM private key; stored encrypted like signing "
        "secrets and never returned (client_key_set says whether one is kept)."
    ),
    "examples": [PEM_KEY],
}
SERVER_CA: Json = {
    "type": ["string", "null"],
    "maxLength": MAX_PEM,
    "description": (
        "PEM CA certificates trusted for the endpoint's server instead of the system's (a "
        "private CA); null removes them. https and amqps URLs only."
    ),
    "examples": [PEM_CA],
}
CERTIFICATE_PAIR: Json = {
    field: {
        "if": {"properties": {field: {"type": "string"}}},
        "then": {"required": [other], "properties": {other: {"type": "string"}}},
    }
    for field, other in (("client_certificate", "client_key"), ("client_key", "client_certificate"))
}
"""A client certificate and its key are sent together (``dependentSchemas``); a null
certificate, which removes both, goes alone."""


def settings_input() -> Json:
    """Delivery settings that creation and change bodies take."""
    return {
        "signature_scheme": SIGNATURE_SCHEME,
        "rate_limit": RATE_LIMIT,
        "ordered": ORDERED,
        "disabled": DISABLED,
        "headers": HEADERS,
        "filter": FILTER,
        "client_certificate": CLIENT_CERTIFICATE,
        "client_key": CLIENT_KEY,
        "server_ca": SERVER_CA,
    }


def view_properties() -> Json:
    """Properties of the endpoint view beyond url, events and description."""
    shown = {name: schema for name, schema in settings_input().items() if name != "client_key"}
    return {
        **shown,
        "headers": {**HEADERS, "type": "object"},
        "client_key_set": {
            "type": "boolean",
            "description": "Whether a client key is kept (it is never returned).",
        },
        "disabled_reason": {
            "type": ["string", "null"],
            "enum": [DISABLED_MANUALLY, DISABLED_FAILING, None],
            "description": (
                f"{DISABLED_MANUALLY}: turned off with PATCH; {DISABLED_FAILING}: every "
                "delivery attempt failed for SVC_ENDPOINT_DISABLE_AFTER (5 days by default)."
            ),
        },
        "previous_secret_expires_at": {
            **TIMESTAMP,
            "type": ["string", "null"],
            "description": "Until then the secret replaced by the last rotation signs too.",
        },
    }


def schemas(target_url: Json, events: Json, description: Json) -> Json:
    return {
        "WebhookEndpointUpdate": obj(
            {
                "url": target_url,
                "events": events,
                "description": description,
                **settings_input(),
                "replay": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "With disabled false only: deliver the events skipped while the "
                        "endpoint was disabled (outcome skipped_disabled), in the order they "
                        "were created."
                    ),
                },
            },
            required=[],
            description="The fields to change; the others stay as they are.",
            dependentSchemas=CERTIFICATE_PAIR,
            # replay true only with disabled false (else 422 replay_without_enabling)
            **{
                "if": {"properties": {"replay": {"const": True}}, "required": ["replay"]},
                "then": {"properties": {"disabled": {"const": False}}, "required": ["disabled"]},
            },
            examples=[{"events": ["payment.succeeded", "payment.failed"], "rate_limit": 50}],
        ),
        "SecretRotation": obj(
            {
                "expire_previous_in": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "maximum": MAX_EXPIRE_PREVIOUS,
                    "default": DEFAULT_EXPIRE_PREVIOUS,
                    "description": (
                        "Seconds the replaced secret keeps signing, next to the new one; 0 "
                        "stops it at once. An older replaced secret stops at once either way."
                    ),
                }
            },
            required=[],
            examples=[{"expire_previous_in": 3600}],
        ),
        "RecoverRequest": obj(
            {
                "since": {
                    **TIMESTAMP,
                    "description": "ISO 8601 time with its offset, e.g. 2026-11-21T08:00:00Z.",
                    "examples": ["2026-11-21T08:00:00Z"],
                }
            },
            examples=[{"since": "2026-11-21T08:00:00Z"}],
        ),
        "RecoverScheduled": obj(
            {
                "endpoint_id": id_of("we", "webhook endpoint"),
                "events": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": RECOVER_LIMIT,
                    "description": "Events queued for delivery, oldest first.",
                },
                "has_more": {
                    "type": "boolean",
                    "description": (
                        "More were found than one call sends (SVC_MAX_RECOVER_EVENTS, at "
                        f"most {RECOVER_LIMIT:,}): call again with the same since once these "
                        "are delivered."
                    ),
                },
                "status": {"const": "scheduled"},
            }
        ),
    }
