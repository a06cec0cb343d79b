"""Endpoint operations: creation with delivery settings, changes (PATCH) validated like
creation and announced to dispatchers, secret rotation with the previous secret kept
encrypted until it expires, and re-encryption of both secrets under a new key."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
import trustme

from cli import admin
from svc.context import Context
from svc.crypto import SecretBox, new_key_text
from svc.orgs import Scope
from svc.settings import Settings
from svc.webhooks.store import Endpoints
from tests.conftest import Api

HOOK = "https://hooks.example.com/svc"
DAY_MS = 86_400_000


async def _scope(ctx: Context, api: Api) -> Scope:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope


async def _patch(api: Api, endpoint_id: object, body: object) -> tuple[int, dict[str, object]]:
    status, answer = await api.call("PATCH", f"/v1/webhook_endpoints/{endpoint_id}", json=body)
    assert isinstance(answer, dict)
    return status, answer


async def test_creation_takes_the_delivery_settings(api: Api) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    assert {k: created[k] for k in ("signature_scheme", "rate_limit", "ordered", "disabled")} == {
        "signature_scheme": "svc",
        "rate_limit": None,
        "ordered": False,
        "disabled": False,
    }
    assert created["disabled_reason"] is None and created["previous_secret_expires_at"] is None
    body = {
        "url": HOOK,
        "events": ["payment.created"],
        "signature_scheme": "standard-webhooks",
        "rate_limit": 5,
        "ordered": True,
        "disabled": True,
    }
    status, made = await api.call("POST", "/v1/webhook_endpoints", json=body)
    assert status == 201 and isinstance(made, dict)
    assert made["signature_scheme"] == "standard-webhooks" and made["rate_limit"] == 5
    assert made["ordered"] is True and made["disabled"] is True
    assert made["disabled_reason"] == "manual"
    status, read = await api.call("GET", f"/v1/webhook_endpoints/{made['id']}")
    assert status == 200 and read == {k: v for k, v in made.items() if k != "secret"}


async def test_patch_changes_each_field_and_announces_it(
    api: Api, ctx: Context, notices: asyncio.Queue[list[str]]
) -> None:
    scope = await _scope(ctx, api)
    endpoint_id = (await api.endpoint(HOOK, ["payment.created"]))["id"]
    while not notices.empty():
        notices.get_nowait()
    changes: list[dict[str, object]] = [
        {"url": HOOK + "/v2"},
        {"events": ["payment.succeeded", "refund.failed"]},
        {"description": "till 4"},
        {"description": None},
        {"rate_limit": 20},
        {"rate_limit": None},
        {"ordered": True},
        {"signature_scheme": "standard-webhooks"},
        {"disabled": True},
        {"disabled": False},
    ]
    for change in changes:
        status, view = await _patch(api, endpoint_id, change)
        assert status == 200, view
        [(name, value)] = change.items()
        assert view[name] == ("" if value is None and name == "description" else value)
        assert view["disabled_reason"] == ("manual" if view["disabled"] else None)
        async with asyncio.timeout(1):  # dispatchers hear of it within a second
            assert await notices.get() == [scope.org, scope.env]
    stored = await ctx.endpoints.load(str(endpoint_id))
    assert stored is not None
    assert (stored.url, stored.events, stored.description) == (
        HOOK + "/v2",
        ("payment.succeeded", "refund.failed"),
        "",
    )
    assert (stored.rate_limit, stored.ordered, stored.signature_scheme) == (
        None,
        True,
        "standard-webhooks",
    )
    assert not stored.disabled and stored.disabled_reason is None
    status, unchanged = await _patch(api, endpoint_id, {})
    assert status == 200 and unchanged["url"] == HOOK + "/v2"


async def test_a_whole_number_written_with_a_fraction_is_an_integer(api: Api, ctx: Context) -> None:
    """JSON Schema's integer: 894.0 is 894, stored and shown as an integer."""
    endpoint_id = (await api.endpoint(HOOK, ["payment.created"]))["id"]
    status, view = await _patch(api, endpoint_id, {"rate_limit": 894.0})
    assert status == 200 and view["rate_limit"] == 894 and isinstance(view["rate_limit"], int)
    stored = await ctx.endpoints.load(str(endpoint_id))
    assert stored is not None and stored.rate_limit == 894 and isinstance(stored.rate_limit, int)


PATCH_PROBLEMS: list[tuple[dict[str, object], str, str]] = [
    ({"url": "ftp://example.com/x"}, "url", "unsupported_scheme"),
    ({"url": None}, "url", "required"),
    ({"url": "https://u:p@example.com/"}, "url", "invalid_url"),
    ({"events": []}, "events", "empty"),
    ({"events": ["payment.nope"]}, "events[0]", "unknown_event_type"),
    ({"description": 5}, "description", "invalid_type"),
    ({"description": "\x00"}, "description", "invalid_character"),
    ({"url": "https://a.example/\x00"}, "url", "invalid_url"),
    ({"rate_limit": 0}, "rate_limit", "out_of_range"),
    ({"rate_limit": 10_001}, "rate_limit", "out_of_range"),
    ({"rate_limit": 1.5}, "rate_limit", "invalid_type"),
    ({"rate_limit": True}, "rate_limit", "invalid_type"),
    ({"ordered": "yes"}, "ordered", "invalid_type"),
    ({"disabled": None}, "disabled", "invalid_type"),
    ({"signature_scheme": "hmac"}, "signature_scheme", "invalid_choice"),
    ({"colour": "red"}, "colour", "unknown_field"),
]


async def test_patch_problems_name_the_field_and_change_nothing(api: Api) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    for body, field, code in PATCH_PROBLEMS:
        status, problem = await _patch(api, created["id"], {"ordered": True, **body})
        assert status == 422 and problem["code"] == "validation_error", body
        errors = problem["errors"]
        assert isinstance(errors, list)
        found = [{k: e[k] for k in ("field", "code")} for e in errors]
        assert {"field": field, "code": code} in found, (body, found)
    status, read = await api.call("GET", f"/v1/webhook_endpoints/{created['id']}")
    assert read == {k: v for k, v in created.items() if k != "secret"}


@pytest.mark.settings(allow_private_targets=False)
async def test_patch_refuses_private_targets_like_creation(api: Api) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    for url in ("http://127.0.0.1:9000/hooks", "http://localhost/hooks"):
        status, problem = await _patch(api, created["id"], {"url": url})
        assert status == 422
        assert [(e["field"], e["code"]) for e in problem["errors"]] == [  # type: ignore[attr-defined]
            ("url", "private_target")
        ]


async def test_patch_body_must_be_a_json_object(api: Api) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    status, problem = await _patch(api, created["id"], ["url"])
    assert status == 400 and problem["code"] == "invalid_json"


async def test_standard_webhooks_needs_a_base64_secret(api: Api, ctx: Context) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    endpoint_id = str(created["id"])
    legacy = "whsec_" + "Ab-_" * 10  # the URL-safe secrets made before this mode
    key_id, sealed = ctx.box.seal(legacy.encode(), endpoint_id)
    await ctx.db.execute(
        "UPDATE webhook_endpoints SET secret = $2, secret_key_id = $3 WHERE id = $1",
        endpoint_id,
        sealed,
        key_id,
    )
    status, problem = await _patch(api, endpoint_id, {"signature_scheme": "standard-webhooks"})
    assert status == 422
    assert problem["errors"][0]["code"] == "rotation_needed"  # type: ignore[index]
    rotate = f"/v1/webhook_endpoints/{endpoint_id}/rotate_secret"
    status, _ = await api.call("POST", rotate)  # the legacy secret still signs for a day
    assert status == 200
    status, problem = await _patch(api, endpoint_id, {"signature_scheme": "standard-webhooks"})
    assert status == 422
    status, _ = await api.call("POST", rotate, json={"expire_previous_in": 0})
    assert status == 200
    status, view = await _patch(api, endpoint_id, {"signature_scheme": "standard-webhooks"})
    assert status == 200 and view["signature_scheme"] == "standard-webhooks"


async def test_another_organisations_endpoint_is_404(make_api: object) -> None:
    owner: Api = await make_api(org="acme")  # type: ignore[operator]
    other: Api = await make_api(org="other")  # type: ignore[operator]
    created = await owner.endpoint(HOOK, ["payment.created"])
    path = f"/v1/webhook_endpoints/{created['id']}"
    calls = [
        ("PATCH", path, {"disabled": True}),
        ("POST", path + "/rotate_secret", {}),
        ("POST", path + "/recover", {"since": "2026-01-01T00:00:00Z"}),
    ]
    for method, route, body in calls:
        status, problem = await other.call(method, route, json=body)
        assert status == 404 and isinstance(problem, dict), (route, problem)
        assert problem["code"] == "endpoint_not_found"
    status, read = await owner.call("GET", path)
    assert status == 200 and isinstance(read, dict) and read["disabled"] is False


async def test_rotation_keeps_the_previous_secret_until_it_expires(
    api: Api, ctx: Context, notices: asyncio.Queue[list[str]]
) -> None:
    scope = await _scope(ctx, api)
    created = await api.endpoint(HOOK, ["payment.created"])
    endpoint_id, old = str(created["id"]), str(created["secret"])
    before = int(time.time() * 1000)
    status, rotated = await api.call("POST", f"/v1/webhook_endpoints/{endpoint_id}/rotate_secret")
    assert status == 200 and isinstance(rotated, dict)
    new = str(rotated["secret"])
    assert new.startswith("whsec_") and new != old
    async with asyncio.timeout(1):  # the creation's notice, then the rotation's
        assert [await notices.get(), await notices.get()] == [[scope.org, "test"]] * 2

    stored = await ctx.endpoints.load(endpoint_id)
    assert stored is not None and (stored.secret, stored.previous_secret) == (new, old)
    expires = stored.previous_secret_expires_ms
    assert expires is not None and before + DAY_MS <= expires <= before + DAY_MS + 60_000
    assert stored.signing_secrets(expires - 1) == (new, old)
    assert stored.signing_secrets(expires) == (new,)
    assert rotated["previous_secret_expires_at"] is not None
    status, read = await api.call("GET", f"/v1/webhook_endpoints/{endpoint_id}")
    assert read == {k: v for k, v in rotated.items() if k != "secret"}

    row = await ctx.db.fetchrow(
        "SELECT previous_secret, previous_secret_key_id FROM webhook_endpoints WHERE id = $1",
        endpoint_id,
    )
    assert old.encode() not in bytes(row["previous_secret"])
    assert row["previous_secret_key_id"] == ctx.box.current


async def test_rotating_twice_keeps_the_newest_previous_and_zero_stops_at_once(
    api: Api, ctx: Context
) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    path = f"/v1/webhook_endpoints/{created['id']}/rotate_secret"
    _, first = await api.call("POST", path, json={"expire_previous_in": 3600})
    _, second = await api.call("POST", path, json={"expire_previous_in": 600})
    assert isinstance(first, dict) and isinstance(second, dict)
    stored = await ctx.endpoints.load(str(created["id"]))
    assert stored is not None
    assert (stored.secret, stored.previous_secret) == (second["secret"], first["secret"])
    assert stored.previous_secret_expires_ms is not None
    assert stored.previous_secret_expires_ms - int(time.time() * 1000) <= 600_000
    assert created["secret"] not in stored.signing_secrets(int(time.time() * 1000))

    status, third = await api.call("POST", path, json={"expire_previous_in": 0})
    assert status == 200 and isinstance(third, dict)
    assert third["previous_secret_expires_at"] is None
    stored = await ctx.endpoints.load(str(created["id"]))
    assert stored is not None and stored.previous_secret is None
    assert stored.signing_secrets(int(time.time() * 1000)) == (third["secret"],)


async def test_a_replayed_rotation_rotates_once(api: Api, ctx: Context) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    path = f"/v1/webhook_endpoints/{created['id']}/rotate_secret"
    headers = {"Idempotency-Key": "rotate-1"}
    _, first = await api.call("POST", path, json={"expire_previous_in": 60}, headers=headers)
    _, again = await api.call("POST", path, json={"expire_previous_in": 60}, headers=headers)
    assert first == again
    stored = await ctx.endpoints.load(str(created["id"]))
    assert stored is not None and stored.previous_secret == created["secret"]


ROTATION_PROBLEMS: list[tuple[dict[str, object], str]] = [
    ({"expire_previous_in": -1}, "out_of_range"),
    ({"expire_previous_in": 604_801}, "out_of_range"),
    ({"expire_previous_in": "1h"}, "invalid_type"),
    ({"expire_previous_in": True}, "invalid_type"),
    ({"expire_in": 5}, "unknown_field"),
]


async def test_rotation_problems_name_the_field(api: Api, ctx: Context) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    path = f"/v1/webhook_endpoints/{created['id']}/rotate_secret"
    for body, code in ROTATION_PROBLEMS:
        status, problem = await api.call("POST", path, json=body)
        assert status == 422 and isinstance(problem, dict), body
        assert problem["errors"][0]["code"] == code, body
    stored = await ctx.endpoints.load(str(created["id"]))
    assert stored is not None and stored.secret == created["secret"]


async def test_reencrypt_seals_previous_secrets_and_headers_under_the_new_key(
    api: Api, ctx: Context, settings: Settings
) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    broker = await api.endpoint("amqps://shop:pw-1@mq.example/?exchange=x", ["payment.created"])
    path = f"/v1/webhook_endpoints/{created['id']}/rotate_secret"
    _, rotated = await api.call("POST", path, json={"expire_previous_in": 3600})
    assert isinstance(rotated, dict)
    headers = {"Authorization": "Bearer receiver-token"}
    issued = trustme.CA().issue_cert("client.example")
    client = {
        "headers": headers,
        "client_certificate": issued.cert_chain_pems[0].bytes().decode(),
        "client_key": issued.private_key_pem.bytes().decode(),
    }
    status, _ = await api.call("PATCH", f"/v1/webhook_endpoints/{created['id']}", json=client)
    assert status == 200
    rotated_key = replace(settings, secret_key=f"{new_key_text('next')},{settings.secret_key}")
    assert await admin.reencrypt(rotated_key) == 6  # and the broker endpoint's two
    row = await ctx.db.fetchrow(
        """SELECT secret_key_id, previous_secret_key_id, headers_key_id, client_key_key_id
           FROM webhook_endpoints WHERE id = $1""",
        created["id"],
    )
    assert tuple(row.values()) == ("next", "next", "next", "next")
    only_next = replace(settings, secret_key=rotated_key.secret_key.split(",")[0])
    reader = Endpoints(ctx.db, SecretBox.parse(only_next.secret_key))
    stored = await reader.load(str(created["id"]))
    assert stored is not None
    assert (stored.secret, stored.previous_secret) == (rotated["secret"], created["secret"])
    assert stored.headers == headers and stored.client_key == client["client_key"]
    stored = await reader.load(str(broker["id"]))
    assert stored is not None and stored.url_password == "pw-1"
    assert await admin.reencrypt(rotated_key) == 0
