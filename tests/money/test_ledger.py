"""The ledger against a model: random sequences of payments, refunds, chargebacks and payouts
keep every balance equal to the sum of its entries, and to what the rules say it must be."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import asyncpg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from svc.context import Context
from svc.db.times import now_ms
from svc.money.errors import MoneyError
from svc.money.flow import chargebacks, payouts, refunds
from svc.money.model.pricing import Pricing, partner_share
from svc.orgs import Scope
from svc.payments import flow
from svc.settings import DEFAULT_PRICING

PRICES = Pricing.parse(DEFAULT_PRICING)
CHARGEBACK_FEE = PRICES.rate("chargeback").charge(1)
CHANNELS = ("online", "phone")

pay = st.tuples(st.just("pay"), st.integers(1, 20_000), st.sampled_from(CHANNELS))
refund_amounts = st.one_of(
    st.none(),  # all that is left
    st.integers(1, 20_000),
    st.integers(0, 99).map(lambda francs: francs * 100 + 5),  # declined in the sandbox
)
steps = st.tuples(
    pay,
    st.lists(
        st.one_of(
            pay,
            st.tuples(st.just("refund"), st.integers(0, 9), refund_amounts),
            st.tuples(st.just("refund"), st.integers(0, 9), refund_amounts),
            st.tuples(st.just("chargeback"), st.integers(0, 9), st.none()),
            st.tuples(st.just("payout"), st.none(), st.none()),
        ),
        max_size=11,
    ),
).map(lambda first_and_rest: [first_and_rest[0], *first_and_rest[1]])


@dataclass
class Paid:
    """The model of one succeeded payment."""

    id: str
    captured: int
    fee: int
    commission: int
    refunded: int = 0
    charged_back: int = 0

    @property
    def remaining(self) -> int:
        return self.captured - self.refunded - self.charged_back

    def back(self, part: int, refunded: int) -> int:
        return part * refunded // self.captured


@dataclass
class Model:
    """What the rules say the balances are, computed apart from the service."""

    partnered: bool
    payments: list[Paid] = field(default_factory=list)
    debits: int = 0  # chargebacks with their fees, and payouts

    @property
    def balance(self) -> int:
        credits = sum(p.captured - p.fee + p.back(p.fee, p.refunded) for p in self.payments)
        return credits - sum(p.refunded for p in self.payments) - self.debits

    @property
    def partner(self) -> int:
        return sum(p.commission - p.back(p.commission, p.refunded) for p in self.payments)


async def _pay(ctx: Context, model: Model, scope: Scope, amount: int, channel: str) -> None:
    async with ctx.unit() as unit:
        created = await flow.create_online(ctx, unit, scope, amount, "CHF", channel, "https://x/")
    payment = await flow.complete(ctx, created.id)
    assert payment is not None and payment.status == "succeeded"
    fee = PRICES.rate(channel).fee(amount)
    assert payment.fee == fee.total
    commission = partner_share(fee) if model.partnered else 0
    model.payments.append(Paid(payment.id, amount, fee.total, commission))


async def _refund(ctx: Context, model: Model, scope: Scope, index: int, amount: int | None) -> None:
    paid = model.payments[index % len(model.payments)]
    wanted = paid.remaining if amount is None else amount
    try:
        async with ctx.unit() as unit:
            made = await refunds.create(ctx, unit, scope, paid.id, amount)
    except MoneyError:
        assert not 0 < wanted <= paid.remaining
        return
    assert 0 < wanted <= paid.remaining
    settled = await ctx.refunds.get(scope, made.id)
    assert settled is not None
    fee_back = paid.back(paid.fee, paid.refunded + wanted) - paid.back(paid.fee, paid.refunded)
    event(f"refund {settled.status} {settled.failure_code or ''}".strip())
    if wanted % 100 == 5:
        assert settled.failure_code == "declined"
    elif model.balance < wanted - fee_back:
        assert settled.failure_code == "insufficient_funds"
    else:
        assert settled.status == "succeeded", settled
        paid.refunded += wanted


async def _chargeback(ctx: Context, model: Model, scope: Scope, index: int) -> None:
    paid = model.payments[index % len(model.payments)]
    try:
        async with ctx.unit() as unit:
            made = await chargebacks.receive(ctx, unit, scope, paid.id, "fraudulent")
    except MoneyError:
        assert paid.charged_back or not paid.remaining
        return
    event("chargeback")
    assert (made.amount, made.fee) == (paid.remaining, CHARGEBACK_FEE)
    paid.charged_back = made.amount
    model.debits += made.amount + made.fee


async def _payout(ctx: Context, model: Model, scope: Scope) -> None:
    try:
        async with ctx.unit() as unit:
            made = await payouts.pay_out(ctx, unit, scope, "CHF", None)
    except MoneyError:
        assert model.balance <= 0
        return
    event("payout")
    assert made.amount == model.balance > 0
    model.debits += made.amount


async def _entries_total(ctx: Context, scope: Scope) -> int:
    total = await ctx.db.fetchval(
        """SELECT coalesce(sum(e.amount), 0) FROM ledger_entries e
           JOIN balance_transactions t ON t.id = e.transaction_id
           WHERE t.org_id = $1 AND t.env = $2 AND e.account = 'balance'""",
        scope.org,
        scope.env,
    )
    return int(total)


async def _check(ctx: Context, model: Model, scope: Scope, partner: Scope) -> int:
    held = await ctx.ledger.balance(scope, "CHF", now_ms())
    assert held.pending == 0  # no settlement delay here
    assert held.total == await _entries_total(ctx, scope) == model.balance
    partner_held = await ctx.ledger.balance(partner, "CHF", now_ms())
    assert partner_held.total == await _entries_total(ctx, partner) == model.partner >= 0
    return held.total


@pytest.mark.timeout(120)
@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=steps, partnered=st.booleans())
async def test_balances_follow_the_rules_over_random_sequences(
    ctx: Context, steps: list[tuple[str, int | None, object]], partnered: bool
) -> None:
    tag = uuid.uuid4().hex[:12]
    partner = Scope(await ctx.orgs.ensure(f"partner-{tag}"), "test")
    scope = Scope(await ctx.orgs.ensure(f"shop-{tag}"), "test")
    if partnered:
        await ctx.orgs.mark_partner(partner.org)
        await ctx.db.execute(
            "UPDATE organisations SET partner_id = $2 WHERE id = $1", scope.org, partner.org
        )
    model = Model(partnered)
    for kind, number, extra in steps:
        before = await _check(ctx, model, scope, partner)
        if kind == "pay":
            assert isinstance(number, int) and isinstance(extra, str)
            await _pay(ctx, model, scope, number, extra)
        elif kind == "refund":
            assert number is not None and (extra is None or isinstance(extra, int))
            await _refund(ctx, model, scope, number, extra)
        elif kind == "chargeback":
            assert number is not None
            await _chargeback(ctx, model, scope, number)
        else:
            await _payout(ctx, model, scope)
        after = await _check(ctx, model, scope, partner)
        if kind != "chargeback" and before >= 0:
            assert after >= 0, "only a chargeback may overdraw a balance"
    unbalanced = await ctx.db.fetchval(
        "SELECT count(*) FROM (SELECT transaction_id FROM ledger_entries "
        "GROUP BY transaction_id HAVING sum(amount) <> 0) AS off"
    )
    assert unbalanced == 0


async def test_the_database_refuses_unbalanced_or_changed_entries(ctx: Context) -> None:
    scope = Scope(await ctx.orgs.ensure("acme"), "test")
    async with ctx.db.transaction() as unit:
        txn = await ctx.ledger.post(unit, scope, "CHF", "payment", 100, "pay_x", now_ms())
    with pytest.raises(asyncpg.RaiseError, match="append-only"):
        await ctx.db.execute(
            "UPDATE ledger_entries SET amount = 1 WHERE transaction_id = $1", txn.id
        )
    with pytest.raises(asyncpg.RaiseError, match="append-only"):
        await ctx.db.execute("DELETE FROM balance_transactions WHERE id = $1", txn.id)
    with pytest.raises(asyncpg.RaiseError, match="does not balance"):
        async with ctx.db.transaction() as unit:
            await unit.execute(
                """INSERT INTO balance_transactions (id, org_id, env, currency, type, amount,
                       source_id, available_on, created_at)
                   VALUES ('txn_odd', $1, 'test', 'CHF', 'payment', 100, 'pay_y', now(), now())""",
                scope.org,
            )
            await unit.execute(
                """INSERT INTO ledger_entries (transaction_id, account, amount)
                   VALUES ('txn_odd', 'balance', 100), ('txn_odd', 'card_network', -99)"""
            )
    assert await ctx.ledger.get(scope, "txn_odd") is None
