"""Prices, rounding and the payout schedule: pure arithmetic, properties over all amounts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.input.payments import MAX_AMOUNT
from cli.main import load_settings
from svc.money.model.pricing import (
    Fee,
    Pricing,
    Rate,
    configured,
    given_back,
    partner_share,
)
from svc.money.model.schedule import DAY_MS, PayoutSchedule
from svc.settings import DEFAULT_PRICING, Settings, SettingsError

amounts = st.integers(min_value=1, max_value=MAX_AMOUNT)
rates = st.builds(
    Rate, st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=10_000)
)


def test_default_prices_and_the_worked_example() -> None:
    prices = Pricing.parse(DEFAULT_PRICING)
    assert prices.rate("online").fee(2450) == Fee(total=101, percentage=71)  # 71.05 → 71
    assert prices.rate("phone").fee(2450) == Fee(total=113, percentage=83)  # 83.3 → 83
    assert prices.rate("terminal").fee(2450) == Fee(total=52, percentage=42)  # 41.65 → 42
    assert prices.rate("chargeback").charge(2450) == 1500
    assert partner_share(prices.rate("online").fee(2450)) == 7  # 10 % of 71, rounded down


def test_the_percentage_part_rounds_half_up_and_the_fee_never_exceeds_the_amount() -> None:
    rate = Rate(250, 0)  # 2.5 %
    assert [rate.percentage_of(n) for n in (19, 20, 21, 59, 60, 61)] == [0, 1, 1, 1, 2, 2]
    assert Rate.parse("2.9%+30").fee(1) == Fee(total=1, percentage=0)  # the fixed part yields
    assert Rate.parse("2.9%+30").fee(31) == Fee(total=31, percentage=1)


@given(amounts, rates)
def test_fees_are_whole_rappen_and_no_rappen_is_lost(amount: int, rate: Rate) -> None:
    fee = rate.fee(amount)
    assert 0 <= fee.percentage <= fee.total <= amount
    assert fee.total == min(amount, fee.percentage + rate.fixed)
    exact = amount * rate.basis_points / 10_000
    assert abs(fee.percentage - exact) <= 0.5  # the nearest Rappen, halves up
    share = partner_share(fee)
    assert 0 <= share <= fee.percentage / 10 < share + 1
    platform, merchant = fee.total - share, amount - fee.total
    assert merchant + platform + share == amount


@given(amounts, st.integers(min_value=0, max_value=MAX_AMOUNT), st.data())
def test_refunds_give_back_exactly_the_part_over_any_split(
    captured: int, part: int, data: st.DataObject
) -> None:
    part = min(part, captured)
    cuts = sorted(data.draw(st.lists(st.integers(min_value=0, max_value=captured), max_size=6)))
    refunded = [0, *cuts, captured]
    back = [given_back(part, captured, a, b) for a, b in zip(refunded, refunded[1:], strict=False)]
    assert all(b >= 0 for b in back)
    assert sum(back) == part
    for before, after in zip(refunded, refunded[1:], strict=False):  # never ahead of proportion
        assert part * before // captured + given_back(part, captured, before, after) <= (
            part * after / captured
        )


@pytest.mark.parametrize("text", ["2.9%+30", "1.7%", "1500", "0", "0.05%+1", "100%"])
def test_rates_read_back_as_written(text: str) -> None:
    assert Rate.parse(text).text == text


@pytest.mark.parametrize("text", ["", "%", "2.999%", "101%", "-1", "abc", "2,9%", "1e3"])
def test_bad_rates_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        Rate.parse(text)


def test_svc_pricing_overrides_the_kinds_it_names() -> None:
    prices = configured("terminal=1.5%+5")
    assert prices.rate("terminal") == Rate(150, 5)
    assert prices.rate("online") == Rate(290, 30)
    assert Settings.from_env({"SVC_PRICING": "online=2%"}).pricing == "online=2%"
    for bad in ("online=2%,online=3%", "card=2%", "online"):
        with pytest.raises(SettingsError, match="SVC_PRICING"):
            load_settings({"SVC_PRICING": bad})


def test_payout_schedules() -> None:
    monday = 1_763_942_400_000  # 2025-11-24T00:00:00Z, a Monday
    daily, weekly = PayoutSchedule.parse("daily"), PayoutSchedule.parse("weekly")
    assert daily.period_start(monday + 5 * 3_600_000) == monday
    assert weekly.period_start(monday + 6 * DAY_MS + 1) == monday
    assert weekly.period_start(monday - 1) == monday - 7 * DAY_MS
    assert PayoutSchedule.parse("6h").period_start(monday + 7 * 3_600_000) == monday + 21_600_000
    assert not PayoutSchedule.parse("manual").automatic
    assert PayoutSchedule.parse("2s").check_interval == 1.0
    with pytest.raises(SettingsError, match="SVC_PAYOUT_SCHEDULE"):
        load_settings({"SVC_PAYOUT_SCHEDULE": "hourly"})
