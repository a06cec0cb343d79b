"""Idempotency records belong to the API key that made them: another key of the organisation
sending the same ``Idempotency-Key`` and body is a new request, never a replay of the first
key's answer (a new key's secret, an endpoint's signing secret, a rotated one); a key whose
permissions were narrowed gets no stored answer it could no longer obtain; records stored
before they named their key replay only to the one key that can have made them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg
import pytest

from harness.receivers import Receiver
from svc.context import Context
from svc.crypto import SecretBox, digest
from svc.db import Database
from svc.db.migrate import migrate
from svc.errors import KeyReused
from svc.idempotency import Idempotency, Stored, fingerprint, taken
from svc.keys.model import ApiKey
from svc.keys.store import ApiKeys
from svc.orgs import Scope
from svc.orgs.store import Organisations
from tests.conftest import SECRET_KEY, Api
from tests.integration.test_api_keys import as_key, make_key, new_key_client
from tests.integration.test_migrations import empty_url  # noqa: F401  (a fixture)

REPLAYED = "Idempotent-Replayed"


async def _post(
    api: Api, path: str, idempotency_key: str, body: dict[str, Any]
) -> tuple[int, Any, dict[str, str]]:
    headers = {**api.headers, "Idempotency-Key": idempotency_key}
    async with api.session.post(path, json=body, headers=headers) as response:
        return response.status, await response.json(content_type=None), dict(response.headers)


async def test_another_key_never_gets_a_new_keys_secret(api: Api) -> None:
    body = {"name": "ops", "permissions": None}
    first = await _post(api, "/v1/api_keys", "make-ops", body)
    assert first[0] == 201 and first[1]["secret"].startswith("svc_test_")

    manager = await new_key_client(api, permissions=["api_keys:write"])
    status, answer, headers = await _post(manager, "/v1/api_keys", "make-ops", body)
    assert REPLAYED not in headers and first[1]["secret"] not in str(answer)
    assert status == 403 and answer["code"] == "permission_denied"
    assert answer["permission"] == "full_access"

    # A second full-access key may make a key: its own, not the first one's again.
    other = await new_key_client(api, permissions=None)
    status, answer, headers = await _post(other, "/v1/api_keys", "make-ops", body)
    assert status == 201 and REPLAYED not in headers
    assert answer["id"] != first[1]["id"] and answer["secret"] != first[1]["secret"]
    again = await _post(api, "/v1/api_keys", "make-ops", body)  # the first key's own replay
    assert again[0] == 201 and again[1] == first[1] and again[2][REPLAYED] == "true"


async def test_another_key_never_gets_an_endpoints_signing_secret(
    api: Api, receiver: Receiver
) -> None:
    body = {"url": receiver.url("/hook"), "events": ["payment.created"]}
    first = await _post(api, "/v1/webhook_endpoints", "hook-1", body)
    assert first[0] == 201 and first[1]["secret"].startswith("whsec_")

    webhooks = await new_key_client(api, permissions=["webhooks:write"])
    status, answer, headers = await _post(webhooks, "/v1/webhook_endpoints", "hook-1", body)
    assert status == 201 and REPLAYED not in headers
    assert answer["id"] != first[1]["id"] and answer["secret"] != first[1]["secret"]


async def test_another_key_never_gets_a_rotated_secret(api: Api, receiver: Receiver) -> None:
    endpoint = await api.endpoint(receiver.url("/hook"), ["payment.created"])
    path = f"/v1/webhook_endpoints/{endpoint['id']}/rotate_secret"
    first = await _post(api, path, "rotate-1", {})
    assert first[0] == 200 and first[1]["secret"] != endpoint["secret"]

    webhooks = await new_key_client(api, permissions=["webhooks:write"])
    status, answer, headers = await _post(webhooks, path, "rotate-1", {})
    assert status == 200 and REPLAYED not in headers
    assert answer["secret"] not in (first[1]["secret"], endpoint["secret"])


async def _narrow(ctx: Context, api: Api, key_id: str, permissions: list[str]) -> None:
    """Change a key's permissions as stored, and wait until the API answers with them."""
    await ctx.db.execute("UPDATE api_keys SET permissions = $2 WHERE id = $1", key_id, permissions)
    await ctx.key_changes.announce(key_id)
    started = time.monotonic()
    while (await api.call("GET", "/v1/payments"))[0] != 403:
        assert time.monotonic() - started < 2.0, "the API still takes the old permissions"
        await asyncio.sleep(0.05)


async def test_a_narrowed_key_gets_no_stored_answer_beyond_its_permissions(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    made = await make_key(api, permissions=None)
    own = as_key(api, made["secret"])
    body = {"name": "wide", "permissions": None}
    first = await _post(own, "/v1/api_keys", "make-wide", body)
    hook = {"url": receiver.url("/hook"), "events": ["payment.created"]}
    endpoint = await _post(own, "/v1/webhook_endpoints", "hook-1", hook)
    assert first[0] == 201 and endpoint[0] == 201

    await _narrow(ctx, own, made["id"], ["api_keys:write"])
    status, answer, headers = await _post(own, "/v1/api_keys", "make-wide", body)
    assert status == 403 and REPLAYED not in headers
    assert answer["code"] == "permission_denied" and answer["permission"] == "full_access"
    assert first[1]["secret"] not in str(answer)
    status, answer, headers = await _post(own, "/v1/webhook_endpoints", "hook-1", hook)
    assert status == 403 and answer["permission"] == "webhooks:write"
    assert endpoint[1]["secret"] not in str(answer)


async def test_a_replay_to_the_same_unchanged_key_still_works(api: Api, ctx: Context) -> None:
    made = await make_key(api, permissions=["api_keys:write", "events:read"])
    own = as_key(api, made["secret"])
    body = {"permissions": ["events:read"]}
    first = await _post(own, "/v1/api_keys", "narrow-1", body)
    again = await _post(own, "/v1/api_keys", "narrow-1", body)
    assert first[0] == again[0] == 201 and again[1] == first[1] and again[2][REPLAYED] == "true"
    rows = await ctx.db.fetch("SELECT api_key_id FROM idempotency_keys")
    assert [row["api_key_id"] for row in rows] == [made["id"]]


async def test_expired_records_are_still_swept(api: Api, ctx: Context) -> None:
    for name in ("old", "new"):
        assert (await _post(api, "/v1/api_keys", name, {"name": name}))[0] == 201
    await ctx.db.execute(
        "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' "
        "WHERE ctid = (SELECT min(ctid) FROM idempotency_keys)"
    )
    assert await ctx.idempotency.purge_expired() == 1
    assert await ctx.db.fetchval("SELECT count(*) FROM idempotency_keys") == 1


FORM = "application/x-www-form-urlencoded"
BODY = b"amount=2450&currency=CHF"


async def _legacy_record(conn: asyncpg.Connection, box: SecretBox, org: str, key: str) -> None:
    """A record as stored before records named their key (its body bound as then)."""
    key_digest = digest(key)
    bound = f"idempotency:{org}:test:{key_digest.hex()}"
    key_id, sealed = box.seal(b'{"id": "pay_1"}', bound)
    await conn.execute(
        """INSERT INTO idempotency_keys (org_id, env, key_digest, fingerprint, status,
                                         content_type, body, body_key_id, expires_at)
           VALUES ($1, 'test', $2, $3, 201, 'application/json', $4, $5,
                   now() + interval '1 hour')""",
        org,
        key_digest,
        fingerprint("POST", "/v1/payments", FORM, BODY),
        sealed,
        key_id,
    )


async def _before_per_key_records(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn, through=9)
    finally:
        await conn.close()


async def _begin(db: Database, idem: Idempotency, key: ApiKey, idem_key: str) -> bytes | None:
    stored = await idem.find(
        key.scope, key, idem_key, fingerprint("POST", "/v1/payments", FORM, BODY)
    )
    return None if stored is None else stored.body


async def _claim(db: Database, idem: Idempotency, key: ApiKey, idem_key: str) -> None:
    """Store an answer for ``idem_key`` of ``key``, as a request's unit of work does."""
    request_fp = fingerprint("POST", "/v1/payments", FORM, BODY)
    async with db.transaction() as unit:
        answer = Stored(201, b'{"id": "pay_2"}', "application/json")
        await idem.remember(unit, key.scope, key, idem_key, request_fp, answer)


@pytest.mark.timeout(90)
async def test_records_from_before_keep_replaying_to_their_one_possible_key(
    empty_url: str,  # noqa: F811
) -> None:
    await _before_per_key_records(empty_url)
    box = SecretBox.parse(SECRET_KEY)
    pool = await asyncpg.create_pool(empty_url, min_size=1, max_size=2)
    try:
        db = Database(pool)
        keys = ApiKeys(db, Organisations(db))
        await keys.create("test", "solo")
        await keys.create("test", "pair")
        await keys.create("test", "pair")
        await keys.create("test", "shop")  # its one key, and its partner's ("solo") too
        (solo,), _ = await keys.page(Scope(await _org(db, "solo"), "test"), 10, None)
        pair, _ = await keys.page(Scope(await _org(db, "pair"), "test"), 10, None)
        (shop,), _ = await keys.page(Scope(await _org(db, "shop"), "test"), 10, None)
        await db.execute("UPDATE organisations SET partner_id = $1 WHERE name = 'shop'", solo.org)
        async with pool.acquire() as conn:
            for org in (solo.org, pair[0].org, shop.org):
                await _legacy_record(conn, box, org, "order-1")
            await migrate(conn)
        idem = Idempotency(db, box, 3600)
        # One key could have sent it: it still replays to that key.
        assert await _begin(db, idem, solo, "order-1") == b'{"id": "pay_1"}'
        # Two could have (two keys; a key and its partner's): none gets the answer, and none
        # makes a second payment.
        for key in [*pair, shop]:
            with pytest.raises(KeyReused):
                await _begin(db, idem, key, "order-1")
            with pytest.raises(asyncpg.UniqueViolationError) as refused:
                await _claim(db, idem, key, "order-1")
            assert taken(refused.value)
        assert await _begin(db, idem, pair[0], "order-2") is None
    finally:
        await pool.close()


async def _org(db: Database, name: str) -> str:
    found = await db.fetchval("SELECT id FROM organisations WHERE name = $1", name)
    assert isinstance(found, str)
    return found
