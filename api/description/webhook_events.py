"""The ``webhooks`` section: each event type the service sends, its body and signature headers.

Not a route module: it describes the calls the service makes to subscribed endpoints. The
envelope and data schemas live in ``components.schemas`` so lists of events can refer to them.
"""

from __future__ import annotations

from api.description import chargebacks, payments, payouts, refunds, terminals
from api.description.shapes import event_schema_name
from api.openapi import ENVIRONMENT, TIMESTAMP, Json, id_of, obj, ref
from svc.envelope import EVENT_TYPES
from svc.webhooks.flow import SAMPLE_PAYMENT
from svc.webhooks.model import DISABLED_FAILING, DISABLED_MANUALLY

_ENVELOPE_FIELDS = ("environment", "created_at", "updated_at")
"""What an object's API view carries and its event's ``data`` leaves to the envelope
(``svc.money.model.records.event_data``)."""
_PAYMENT_DATA = (
    "id",
    "object",
    "status",
    "amount",
    "currency",
    "channel",
    "tip",
    "total_amount",
    "terminal_id",
    "failure_code",
    "cancel_reason",
    "fee",
)
"""The members of a ``payment.*`` event's data (``Payment.event_data``), in its order."""
_PAYMENT_ALWAYS = ["id", "object", "status", "amount", "currency", "channel"]
_PAYMENT_NEEDS = {"succeeded": ["fee"], "failed": ["failure_code"], "canceled": ["cancel_reason"]}
_TERMINAL_DATA = ("id", "object", "status", "name", "simulated")
_SIGNATURE = "[A-Za-z0-9+/]{43}="  # base64 of an HMAC-SHA256


def _present(schema: Json) -> Json:
    """A member the event leaves out when it is null: when present, it is never null."""
    kind = schema.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [k for k in kind if k != "null"]
        return {**schema, "type": rest[0] if len(rest) == 1 else rest}
    return schema


def _nullable(schema: Json) -> bool:
    kind = schema.get("type")
    return isinstance(kind, list) and "null" in kind


def _data(properties: Json, status: str, required: list[str], description: str) -> Json:
    """The closed ``data`` object of one event type, whose ``status`` is ``status``."""
    members = {name: _present(schema) for name, schema in properties.items()}
    members["status"] = {"const": status}
    return obj(members, required=[n for n in members if n in required], description=description)


def _object_view(schema_name: str, schemas: Json) -> tuple[Json, list[str]]:
    """An object's API view less the envelope's fields: its properties and those never null."""
    properties = {
        name: value
        for name, value in schemas[schema_name]["properties"].items()
        if name not in _ENVELOPE_FIELDS
    }
    return properties, [n for n, value in properties.items() if not _nullable(value)]


def _data_schemas() -> dict[str, Json]:
    """The data schema of each event type, by event type."""
    payment = payments.schemas()["Payment"]["properties"]
    payment_properties = {name: payment[name] for name in _PAYMENT_DATA}
    payment_properties["tip"] = {**payment["tip"], "minimum": 1}
    payment_properties["terminal_id"] = {**id_of("trm", "terminal"), "type": "string"}
    found: dict[str, Json] = {}
    for status in ("created", "authorized", "succeeded", "failed", "canceled"):
        state = "pending" if status == "created" else status
        found[f"payment.{status}"] = _data(
            payment_properties,
            state,
            _PAYMENT_ALWAYS + _PAYMENT_NEEDS.get(status, []),
            f"The payment, now {state}; tip and total_amount only when there is a tip, "
            "terminal_id only for a terminal payment.",
        )
    refund, refund_always = _object_view("Refund", refunds.schemas())
    found["refund.succeeded"] = _data(
        refund,
        "succeeded",
        [*refund_always, "balance_transaction_id"],
        "The refund, succeeded: its amount is debited from the balance.",
    )
    found["refund.failed"] = _data(
        refund, "failed", [*refund_always, "failure_code"], "The refund, failed; nothing booked."
    )
    chargeback, chargeback_always = _object_view("Chargeback", chargebacks.schemas())
    found["chargeback.created"] = _data(
        chargeback, "debited", chargeback_always, "The chargeback, debited at once."
    )
    payout, payout_always = _object_view("Payout", payouts.schemas())
    found["payout.paid"] = _data(payout, "paid", payout_always, "The payout, paid.")
    terminal = terminals.schemas()["Terminal"]["properties"]
    terminal_properties = {name: terminal[name] for name in _TERMINAL_DATA}
    for status in ("online", "offline"):
        found[f"terminal.{status}"] = _data(
            terminal_properties, status, list(_TERMINAL_DATA), f"The terminal, now {status}."
        )
    found.update(_operational_schemas())
    return found


def _operational_schemas() -> dict[str, Json]:
    """The data of the events about webhook delivery itself (``svc.notices.model``)."""
    endpoint = {
        "endpoint_id": id_of("we", "webhook endpoint"),
        "url": {"type": "string", "description": "The endpoint's URL."},
    }

    def data(extra: Json, description: str) -> Json:
        members = {**endpoint, **extra}
        return obj(members, required=list(members), description=description)

    return {
        "webhook_endpoint.failing": data(
            {"failing_since": {**TIMESTAMP, "description": "When its failures began at latest."}},
            "Every delivery attempt at the endpoint has failed for SVC_ENDPOINT_FAILING_AFTER; "
            "sent once until its next success or until it is turned off or on.",
        ),
        "webhook_endpoint.disabled": data(
            {
                "reason": {
                    "type": "string",
                    "enum": [DISABLED_FAILING, DISABLED_MANUALLY],
                    "description": "failing: turned off by the service after every attempt "
                    "failed for SVC_ENDPOINT_DISABLE_AFTER; manual: turned off by hand.",
                }
            },
            "The endpoint was turned off: it gets no deliveries until it is turned on.",
        ),
        "webhook_endpoint.enabled": data({}, "The endpoint was turned on again."),
        "delivery.exhausted": data(
            {
                "event_id": {"type": "string", "description": "The event's id."},
                "event_type": {"type": "string", "description": "The event's type."},
            },
            "The retry ladder ran out for this event at this endpoint: no attempt follows.",
        ),
    }


TEST_EVENT_DATA = "TestEventData"


def schemas() -> Json:
    """``<Type>Data``, ``<Type>Event`` and ``Listed<Type>Event`` (as GET /v1/events lists it)
    for each event type, the sample data of test sends and ``WebhookEvent``, any one of the
    events."""
    found: Json = {
        TEST_EVENT_DATA: obj(
            {name: {"const": value} for name, value in SAMPLE_PAYMENT.items()},
            description=(
                "The data of a test send (an endpoint's send_test_event): "
                "always these sample values, in a payment.succeeded event."
            ),
        )
    }
    for event_type, data in _data_schemas().items():
        data_ref = ref(f"{event_schema_name(event_type)}Data")
        if event_type == "payment.succeeded":
            data_ref = {"oneOf": [data_ref, ref(TEST_EVENT_DATA)]}
        found[f"{event_schema_name(event_type)}Data"] = data
        envelope: Json = {
            "id": id_of("evt", "event"),
            "type": {"const": event_type},
            "created_at": TIMESTAMP,
            "environment": ENVIRONMENT,
            "data": data_ref,
        }
        found[f"{event_schema_name(event_type)}Event"] = obj(
            envelope,
            description=f"The body of a {event_type} delivery, the same bytes at every attempt.",
        )
        # A closed envelope cannot be extended by allOf (its additionalProperties would refuse
        # object), so the listed form repeats the envelope's properties and adds object.
        found[f"Listed{event_schema_name(event_type)}Event"] = obj(
            {**envelope, "object": {"const": "event"}},
            description=f"A {event_type} event in GET /v1/events: its delivered body and object.",
        )
    found["WebhookEvent"] = {
        "oneOf": [ref(f"{event_schema_name(t)}Event") for t in EVENT_TYPES],
        "discriminator": {
            "propertyName": "type",
            "mapping": {
                t: f"#/components/schemas/{event_schema_name(t)}Event" for t in EVENT_TYPES
            },
        },
        "description": "Any event the service sends, told apart by type.",
    }
    return found


def _header(name: str, schema: Json, description: str, required: bool = False) -> Json:
    return {
        "name": name,
        "in": "header",
        "required": required,
        "description": description,
        "schema": {"type": "string", **schema},
    }


HEADERS: list[Json] = [
    _header(
        "Svc-Signature",
        {"pattern": "^t=[0-9]+(,v1=[0-9a-f]{64}){1,2}$"},
        "Scheme svc (the default): t=<Unix seconds>,v1=<hex HMAC-SHA256 of t.body>; a second v1 "
        "while a rotated secret is still valid. Verify with svc.signing.verify (or Stripe's "
        "libraries) and reject a t 300 s or more from now.",
    ),
    _header("Svc-Event-Id", {"pattern": "^evt_[0-9a-v]{26}$"}, "Scheme svc: the event's id."),
    _header(
        "webhook-id",
        {"pattern": "^evt_[0-9a-v]{26}$"},
        "Scheme standard-webhooks: the event's id (Standard Webhooks).",
    ),
    _header(
        "webhook-timestamp",
        {"pattern": "^[0-9]+$"},
        "Scheme standard-webhooks: Unix seconds of this attempt.",
    ),
    _header(
        "webhook-signature",
        {"pattern": f"^v1,{_SIGNATURE}( v1,{_SIGNATURE})?$"},
        "Scheme standard-webhooks: v1,<base64 HMAC-SHA256 of id.timestamp.body> keyed with the "
        "whsec_ secret's base64 part; a second one while a rotated secret is still valid. "
        "Verify with the Standard Webhooks libraries.",
    ),
    _header(
        "Svc-Attempt",
        {"pattern": "^[1-9][0-9]*$"},
        "Both schemes: 1 for the first attempt, then one more per retry.",
        required=True,
    ),
]


def webhooks() -> Json:
    """The ``webhooks`` object: one ``post`` per event type, in the order of ``EVENT_TYPES``."""
    described: Json = {}
    for event_type in EVENT_TYPES:
        kind = _header(
            "Svc-Event-Type", {"const": event_type}, "Both schemes: the event's type.", True
        )
        described[event_type] = {
            "post": {
                "operationId": f"on_{event_type.replace('.', '_')}",
                "summary": f"{event_type}, POSTed to each endpoint subscribed to it",
                "description": (
                    "The body is JSON, signed in the endpoint's signature_scheme: verify the "
                    "raw bytes, then deduplicate on the event id (a retry or resend sends "
                    "the same bytes)."
                ),
                "parameters": [*HEADERS, kind],
                "security": [],  # no credential is sent: the signature headers vouch for it
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": ref(f"{event_schema_name(event_type)}Event")}
                    },
                },
                "responses": {
                    "2XX": {
                        "description": (
                            "Success: any 2xx whose head arrives within 10 s "
                            "(SVC_DELIVERY_TIMEOUT); the body is not used."
                        )
                    },
                    "default": {
                        "description": (
                            "Failure, retried on the ladder: any other status (redirects are "
                            "not followed), no answer within 10 s, or a connection, TLS or DNS "
                            "error."
                        )
                    },
                },
            }
        }
    return described
