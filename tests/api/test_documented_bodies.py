"""Every request body the description documents is accepted: its examples, the required fields
alone, each field at its bounds and with each of its values.

Schemathesis cannot check this for POSTs (its generated idempotency keys repeat), so a route
stricter than its description would otherwise go unnoticed.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

from api.description import document
from api.input.payments import MAX_AMOUNT
from svc.context import Context
from tests.conftest import Api
from tests.money.flows import balance, create, paid

DOC = document()
METHODS = ("post", "put", "patch")
FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
NO_BODY = object()
"""The request without any body: what an optional request body allows."""


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    spec: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.spec["operationId"])


def operations_with_bodies() -> list[Operation]:
    return [
        Operation(method, path, spec)
        for path, item in DOC["paths"].items()
        for method, spec in item.items()
        if method in METHODS and "requestBody" in spec
    ]


def resolved(schema: Any) -> Any:
    """``schema`` with every ``$ref`` to a component replaced by the component."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            return resolved(DOC["components"]["schemas"][name])
        return {key: resolved(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [resolved(item) for item in schema]
    return schema


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


def some_value(name: str, schema: dict[str, Any]) -> Any:
    """A valid value of a field: its example, default or first choice, else the smallest."""
    for source in ("examples", "enum"):
        if schema.get(source):
            return schema[source][0]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    types = _types(schema)
    if "array" in types:
        return [some_value(name, schema["items"])]
    if "integer" in types or "number" in types:
        return schema.get("minimum", 1)
    if "boolean" in types:
        return False
    assert "format" not in schema, f"{name}: give the field an example of its {schema['format']}"
    return "a" * max(1, schema.get("minLength", 1))


def edge_values(name: str, schema: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Each value at a bound of the field, and each of its choices."""
    types = _types(schema)
    for choice in schema.get("enum", []):
        yield f"{name}={choice}", choice
    for bound in ("minimum", "maximum"):
        if bound in schema:
            yield f"{name} {bound}", schema[bound]
    if "boolean" in types:
        yield f"{name}=true", True
        yield f"{name}=false", False
    if "null" in types:
        yield f"{name}=null", None
    if "string" in types and "maxLength" in schema:
        text = str(some_value(name, schema))
        yield f"{name} maxLength", text + "a" * (schema["maxLength"] - len(text))
    if "string" in types and "minLength" in schema and "format" not in schema:
        yield f"{name} minLength", "a" * schema["minLength"]
    if "array" in types:
        items = schema["items"]
        if items.get("enum"):
            yield f"{name}: every choice", list(items["enum"])
        if "minItems" in schema:
            yield f"{name} minItems", [some_value(name, items)] * schema["minItems"]


def completed(schema: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the fields a schema's ``if``/``then`` asks for when ``if`` holds (each
    its ``const``): a field that needs another (``replay`` needs ``disabled: false``); and
    the fields a ``dependentSchemas`` entry requires of a field sent (a client key with its
    certificate)."""
    if isinstance(body, dict):
        for name, dependent in schema.get("dependentSchemas", {}).items():
            if name in body and jsonschema.Draft202012Validator(dependent["if"]).is_valid(body):
                for other in dependent["then"]["required"]:
                    body = {other: some_value(other, schema["properties"][other]), **body}
    if "if" not in schema or not jsonschema.Draft202012Validator(schema["if"]).is_valid(body):
        return body
    then = schema["then"]
    return {**body, **{name: then["properties"][name]["const"] for name in then["required"]}}


def bodies(operation: Operation) -> list[tuple[str, str, Any]]:
    """(label, media type, body) of each body to send, each body once."""
    request = operation.spec["requestBody"]
    found: list[tuple[str, str, Any]] = []
    for media, content in request["content"].items():
        schema = resolved(content["schema"])
        examples = [*schema.get("examples", [])]
        examples += [example["value"] for example in content.get("examples", {}).values()]
        if "example" in content:
            examples.append(content["example"])
        assert examples, f"{operation.id}: give the {media} body an example"
        found += [(f"example {i + 1}", media, example) for i, example in enumerate(examples)]
        properties = schema.get("properties", {})
        required = {name: some_value(name, properties[name]) for name in schema["required"]}
        found.append(("required fields only", media, required))
        for name, field in properties.items():
            for label, value in edge_values(name, field):
                found.append((label, media, completed(schema, {**required, name: value})))
        validator = jsonschema.Draft202012Validator(schema)
        for label, _, body in found:
            assert validator.is_valid(body), f"{operation.id}, {label}: {body} is not valid"
    if not request.get("required", False):
        found.append(("no body", "", NO_BODY))
    unique: dict[str, tuple[str, str, Any]] = {}
    for label, media, body in found:
        unique.setdefault(repr((media, body)), (label, media, body))
    return list(unique.values())


def encoded(media: str, body: Any) -> dict[str, Any]:
    """The keyword arguments of aiohttp's request sending ``body`` as ``media``."""
    if body is NO_BODY:
        return {}
    if media == JSON:
        return {"json": body}
    assert media == FORM, media

    def text(value: Any) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    return {"data": {name: text(value) for name, value in body.items()}}


@dataclass
class Caller:
    """What a set-up needs: the test key's client, the kernel, and a partner when asked."""

    api: Api
    ctx: Context
    make_api: Callable[..., Awaitable[Api]]
    partner: Api | None = None

    async def as_partner(self) -> Api:
        if self.partner is None:
            self.partner = await self.make_api(org="platform")
            await self.ctx.orgs.mark_partner(await self.ctx.orgs.ensure("platform"))
        return self.partner


@dataclass(frozen=True)
class Target:
    """Where a body goes: the concrete path, and the client sending it."""

    path: str
    api: Api


SetUp = Callable[[Caller, Operation], Awaitable[Target]]


def _with(operation: Operation, **values: str) -> str:
    return operation.path.format(**values)


async def _endpoint(caller: Caller) -> str:
    endpoint = await caller.api.endpoint("https://shop.example/hooks", ["payment.succeeded"])
    return str(endpoint["id"])


async def plain(caller: Caller, operation: Operation) -> Target:
    return Target(operation.path, caller.api)


async def new_endpoint(caller: Caller, operation: Operation) -> Target:
    return Target(_with(operation, endpoint_id=await _endpoint(caller)), caller.api)


async def free_terminal(caller: Caller, operation: Operation) -> Target:
    """The simulation terminal, its open payment (from an earlier body) canceled; one that
    ended meanwhile (409) leaves the terminal free too."""
    status, listed = await caller.api.call("GET", "/v1/terminals")
    assert status == 200, listed
    terminal = next(t for t in listed["data"] if t["simulated"])  # type: ignore[index]
    if terminal["current_payment_id"]:
        path = f"/v1/payments/{terminal['current_payment_id']}/cancel"
        status, body = await caller.api.call("POST", path)
        assert status in (200, 409), body
    return Target(_with(operation, terminal_id=terminal["id"]), caller.api)


async def open_checkout(caller: Caller, operation: Operation) -> Target:
    payment = await create(caller.api)
    return Target(urlsplit(payment["checkout_url"]).path, caller.api)


async def largest_paid(caller: Caller, operation: Operation) -> Target:
    payment = await paid(caller.api, MAX_AMOUNT)
    return Target(_with(operation, payment_id=payment["id"]), caller.api)


async def new_paid(caller: Caller, operation: Operation) -> Target:
    payment = await paid(caller.api)
    return Target(_with(operation, payment_id=payment["id"]), caller.api)


async def funded(caller: Caller, operation: Operation) -> Target:
    """A balance from which the largest payout can be made."""
    while (await balance(caller.api))[0] < MAX_AMOUNT:
        await paid(caller.api, MAX_AMOUNT)
    return Target(operation.path, caller.api)


async def new_key(caller: Caller, operation: Operation) -> Target:
    status, key = await caller.api.call("POST", "/v1/api_keys", json={})
    assert status == 201, key
    return Target(_with(operation, key_id=key["id"]), caller.api)  # type: ignore[index]


async def as_partner(caller: Caller, operation: Operation) -> Target:
    return Target(operation.path, await caller.as_partner())


SET_UPS: dict[str, SetUp] = {
    "create_webhook_endpoint": plain,
    "update_webhook_endpoint": new_endpoint,
    "rotate_webhook_secret": new_endpoint,
    "recover_webhook_endpoint": new_endpoint,
    "create_payment": plain,
    "create_terminal_payment": free_terminal,
    "act_on_checkout": open_checkout,
    "create_refund": largest_paid,
    "create_sandbox_chargeback": new_paid,
    "create_payout": funded,
    "create_organisation": as_partner,
    "create_api_key": plain,
    "roll_api_key": new_key,
    "update_notification_settings": plain,
    "create_portal_session": plain,
}
"""How to reach each operation with a body: the objects its path names, the key it needs."""


async def refused_bodies(operation: Operation, caller: Caller) -> list[str]:
    """Each documented body of ``operation`` that does not get a documented success."""
    set_up = SET_UPS.get(operation.id)
    assert set_up is not None, f"add a set-up of {operation.id} to SET_UPS"
    refused = []
    for label, media, body in bodies(operation):
        target = await set_up(caller, operation)
        headers = {**target.api.headers, "Idempotency-Key": uuid.uuid4().hex}
        async with target.api.session.request(
            operation.method.upper(),
            target.path,
            headers=headers,
            allow_redirects=False,
            **encoded(media, body),
        ) as response:
            status = response.status
            if not (status < 400 and str(status) in operation.spec["responses"]):
                refused.append(f"{label}: {body!r} → {status} {await response.text()}")
    return refused


@pytest.mark.parametrize("operation", operations_with_bodies(), ids=lambda o: o.id)
async def test_every_documented_body_is_accepted(
    operation: Operation, api: Api, ctx: Context, make_api: Any
) -> None:
    refused = await refused_bodies(operation, Caller(api, ctx, make_api))
    assert refused == [], f"{operation.method.upper()} {operation.path} refused documented bodies"


async def test_a_route_stricter_than_its_description_is_reported(
    api: Api, ctx: Context, make_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the description to allow larger amounts than the route, the bodies at the bound
    would be refused, and reported."""
    (payment,) = [o for o in operations_with_bodies() if o.id == "create_payment"]
    amount = DOC["components"]["schemas"]["PaymentCreate"]["properties"]["amount"]
    monkeypatch.setitem(amount, "maximum", MAX_AMOUNT + 1)
    refused = await refused_bodies(payment, Caller(api, ctx, make_api))
    assert [line.split(":")[0] for line in refused] == ["amount maximum"]


def test_the_bodies_cover_examples_bounds_and_choices() -> None:
    """What is sent for one operation: every choice, the empty form and no body at all."""
    (chargeback,) = [o for o in operations_with_bodies() if o.id == "create_sandbox_chargeback"]
    sent = {label: body for label, _, body in bodies(chargeback)}
    reasons = DOC["components"]["schemas"]["ChargebackCreate"]["properties"]["reason"]["enum"]
    chosen = {body["reason"] for body in sent.values() if isinstance(body, dict) and body}
    assert chosen == set(reasons)
    assert sent["no body"] is NO_BODY
    assert sent["required fields only"] == {}
