"""The payment state machine and its views."""

from __future__ import annotations

import pytest

from svc.payments import FINAL, STATUSES, Payment, allowed


def payment(**changes: object) -> Payment:
    base = Payment(
        id="pay_1",
        org="org_1",
        env="test",
        status="pending",
        amount=2450,
        currency="CHF",
        channel="online",
        created_ms=0,
        updated_ms=0,
        checkout_token="tok",
        success_url="https://shop.example/",
    )
    return Payment(**{**base.__dict__, **changes}) if changes else base  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("current", "target"),
    [
        ("pending", "authorized"),
        ("pending", "failed"),
        ("pending", "canceled"),
        ("authorized", "succeeded"),
        ("authorized", "failed"),
        ("authorized", "canceled"),
    ],
)
def test_allowed_transitions(current: str, target: str) -> None:
    assert allowed(current, target)


def test_no_other_transition_is_allowed() -> None:
    permitted = {
        ("pending", "authorized"),
        ("pending", "failed"),
        ("pending", "canceled"),
        ("authorized", "succeeded"),
        ("authorized", "failed"),
        ("authorized", "canceled"),
    }
    for current in STATUSES:
        for target in STATUSES:
            assert allowed(current, target) == ((current, target) in permitted)
    for final in FINAL:
        assert not any(allowed(final, target) for target in STATUSES)


def test_public_view_has_checkout_url_and_every_key() -> None:
    view = payment().public("https://pay.example/checkout/")
    assert view["checkout_url"] == "https://pay.example/checkout/pay_1/tok"
    assert view["created_at"] == "1970-01-01T00:00:00.000Z"
    assert view["terminal_id"] is None and view["tip"] == 0 and view["total_amount"] == 2450


def test_event_data_carries_id_status_amount_and_tip() -> None:
    moved = payment().moved("authorized", 5, tip=245)
    data = moved.event_data()
    assert data["id"] == "pay_1" and data["status"] == "authorized" and data["amount"] == 2450
    assert data["tip"] == 245 and data["total_amount"] == 2695
    assert "tip" not in payment().event_data()
