"""Records survive the trip through PostgreSQL unchanged, secrets included."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import pytest
from redis.asyncio import Redis

from svc.context import Context
from svc.db import Database, open_database
from svc.idempotency import Stored
from svc.orgs import Scope
from svc.payments import Payment, flow
from svc.pubsub.wakeups import Signal, status_signal


async def test_payment_round_trip(ctx: Context) -> None:
    org = await ctx.orgs.ensure("roundtrip")
    now = int(time.time() * 1000)
    original = Payment(
        id="pay_0roundtrip0000000000000000",
        org=org,
        env="test",
        status="pending",
        amount=2450,
        currency="CHF",
        channel="online",
        created_ms=now,
        updated_ms=now,
        success_url="https://shop.example/",
        checkout_token="tok",
        expires_ms=now + 1000,
    )
    async with ctx.unit() as unit:
        await ctx.payments.insert(unit, original)
    assert await ctx.payments.get(original.id) == original
    moved = original.moved("canceled", now + 5, cancel_reason="expired", expires_ms=None)
    async with ctx.unit() as unit:
        await ctx.payments.update(unit, moved)
    assert await ctx.payments.get(original.id) == moved
    assert await ctx.payments.get_scoped(Scope(org, "live"), original.id) is None
    assert await ctx.payments.with_steps(original.id) == (moved, [])
    for step in ("waiting_for_card", "pin_entry", "processing"):
        await ctx.payments.add_step(original.id, step)
    assert await ctx.payments.with_steps(original.id) == (
        moved,
        ["waiting_for_card", "pin_entry", "processing"],
    )
    assert await ctx.payments.with_steps("pay_0missing00000000000000000") == (None, [])


async def test_endpoint_secret_is_stored_encrypted_and_read_back(ctx: Context) -> None:
    scope = Scope(await ctx.orgs.ensure("secrets"), "test")
    endpoint = await ctx.endpoints.create(ctx.db, scope, "https://a.example/", ["payment.created"])
    stored = await ctx.db.fetchval(
        "SELECT secret FROM webhook_endpoints WHERE id = $1", endpoint.id
    )
    assert endpoint.secret.encode() not in bytes(stored)
    assert await ctx.endpoints.load(endpoint.id) == endpoint
    assert await ctx.endpoints.get(Scope(scope.org, "live"), endpoint.id) is None


async def test_staged_writes_commit_together_and_are_read_back_in_their_unit(
    ctx: Context,
) -> None:
    org = await ctx.orgs.ensure("staged")
    table = "staged_" + org.replace("org_", "").lower()
    await ctx.db.execute(f"CREATE TABLE {table} (id text PRIMARY KEY, n integer NOT NULL)")
    try:
        async with ctx.unit() as unit:
            unit.write(f"INSERT INTO {table} (id, n) VALUES ($1, $2)", "a", 1)
            unit.write(f"INSERT INTO {table} (id, n) VALUES ($1, $2)", "b", 2)
            # A read in the unit sees what it staged: the writes go first.
            assert await unit.fetchval(f"SELECT sum(n) FROM {table}") == 3
            unit.write(f"UPDATE {table} SET n = $2 WHERE id = $1", "a", 10)
        assert await ctx.db.fetchval(f"SELECT sum(n) FROM {table}") == 12
        # A failing staged write fails the unit at its commit: none of its rows stay.
        with pytest.raises(asyncpg.UniqueViolationError):
            async with ctx.unit() as unit:
                unit.write(f"INSERT INTO {table} (id, n) VALUES ($1, $2)", "c", 3)
                unit.write(f"INSERT INTO {table} (id, n) VALUES ($1, $2)", "a", 4)
        assert await ctx.db.fetchval(f"SELECT count(*) FROM {table}") == 2
    finally:
        await ctx.db.execute(f"DROP TABLE {table}")


async def _pending(ctx: Context, org_name: str) -> Payment:
    """A pending online payment of a test organisation of its own."""
    scope = Scope(await ctx.orgs.ensure(org_name), "test")
    async with ctx.unit() as unit:
        return await flow.create_online(
            ctx, unit, scope, 2450, "CHF", "online", "https://shop.example/"
        )


@asynccontextmanager
async def _logged(ctx: Context) -> AsyncIterator[tuple[Database, list[str]]]:
    """A pool of one connection whose statements are logged: a unit of the service's own
    (``Database.transaction``) shows every statement it sends, its commit included."""
    sent: list[str] = []
    async with open_database(ctx.settings.database_url, 1) as db:
        async with db.pool.acquire() as conn:
            conn.add_query_logger(lambda logged: sent.append(logged.query))
        yield db, sent


async def test_a_state_change_is_four_round_trips(ctx: Context) -> None:
    """Begin, the payment's lock, one statement for its row, event and outbox row, commit."""
    payment = await _pending(ctx, "trips")
    async with _logged(ctx) as (db, sent):
        async with db.transaction() as unit:
            moved = await flow.move(
                ctx, payment.id, "canceled", {"cancel_reason": "requested"}, unit=unit
            )
    assert moved is not None and moved.event is not None
    assert [q.split()[0] for q in sent] == ["BEGIN;", "SELECT", "WITH", "COMMIT;"], sent
    assert "UPDATE payments" in sent[2] and "INSERT INTO events" in sent[2]
    stored = await ctx.payments.get(payment.id)
    assert stored is not None and stored.status == "canceled"


async def test_a_creation_with_its_idempotency_record_is_one_statement(ctx: Context) -> None:
    """A unit that only writes (a payment, its event and outbox row, the stored answer)
    sends one statement and no ``BEGIN`` or ``COMMIT``: a statement commits by itself."""
    secret, scope = await ctx.api_keys.create("test", "onetrip")
    found = await ctx.api_keys.authenticate(secret)
    assert found is not None
    async with _logged(ctx) as (db, sent):
        async with db.transaction() as unit:
            payment = await flow.create_online(
                ctx, unit, scope, 2450, "CHF", "online", "https://shop.example/"
            )
            answer = Stored(201, b"{}", "application/json")
            await ctx.idempotency.remember(unit, scope, found.key, "k1", "fp", answer)
    assert [q.split()[0] for q in sent] == ["WITH"], sent
    assert "INSERT INTO idempotency_keys" in sent[0] and "INSERT INTO payments" in sent[0]
    assert await ctx.payments.get(payment.id) == payment


async def test_a_state_change_wakes_its_listeners_before_it_publishes(ctx: Context) -> None:
    """After the commit a move's first effect is the wake-up signal and the event's publish
    comes next: a long poll reads the committed payment without waiting for the broker's
    confirm (the outbox row keeps the event)."""
    payment = await _pending(ctx, "wakeorder")

    def published() -> float:
        value = ctx.metrics.registry.get_sample_value(
            "svc_events_published_total", {"type": "payment.canceled"}
        )
        return value or 0.0

    redis: Redis = Redis.from_url(ctx.settings.redis_url)
    pubsub = redis.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe(ctx.keys.signals)
    try:
        async with ctx.db.transaction() as unit:  # its effects are ours to run, one by one
            moved = await flow.move(
                ctx, payment.id, "canceled", {"cancel_reason": "requested"}, unit=unit
            )
        assert moved is not None and moved.event is not None
        first, *rest = unit.effects
        await first()
        message = None
        async with asyncio.timeout(5):
            while message is None:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
        assert Signal.loads(message["data"]) == status_signal(payment.id, "canceled")
        assert published() == 0
        for effect in rest:
            await effect()
        assert published() == 1
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]
        await redis.aclose()
