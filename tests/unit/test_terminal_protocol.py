"""The terminal protocol's message checks and the simulation terminal's magic amounts."""

from __future__ import annotations

import pytest

from api.sandbox.terminal import outcome_of, plan, tip_for
from svc.terminal import protocol


def test_parse_accepts_each_message_type() -> None:
    assert protocol.parse('{"type":"progress","payment_id":"p","step":"pin_entry"}').step == (
        "pin_entry"
    )
    assert protocol.parse('{"type":"authorized","payment_id":"p","tip":200}').tip == 200
    failed = protocol.parse('{"type":"failed","payment_id":"p","reason":"card_declined"}')
    assert failed.reason == "card_declined"
    assert protocol.parse('{"type":"succeeded","payment_id":"p"}').type == "succeeded"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("[]", "invalid_json"),
        ("{", "invalid_json"),
        ('{"type":"x","payment_id":"p"}', "unknown_type"),
        ('{"type":"succeeded"}', "invalid_field"),
        ('{"type":"authorized","payment_id":"p","tip":true}', "invalid_field"),
        ('{"type":"authorized","payment_id":"p","tip":1.5}', "invalid_field"),
        ('{"type":"failed","payment_id":"p","reason":"Bad Reason"}', "invalid_field"),
    ],
)
def test_parse_refuses_malformed_messages(raw: str, code: str) -> None:
    with pytest.raises(protocol.ProtocolError) as caught:
        protocol.parse(raw)
    assert caught.value.code == code


def test_magic_amounts() -> None:
    assert [outcome_of(a) for a in (2450, 101, 102, 103, 104, 100)] == [
        "approve",
        "decline",
        "customer_cancels",
        "no_answer",
        "capture_fails",
        "approve",
    ]


def test_tip_is_ten_percent_rounded_to_five_rappen() -> None:
    assert tip_for(2450) == 245
    assert tip_for(1234) == 125
    assert tip_for(1) == 0


def steps_and_result(amount: int, tip_prompt: bool) -> list[str]:
    return [m.get("step") or m["type"] for m in plan("p", amount, tip_prompt)]


def test_plans() -> None:
    assert steps_and_result(2450, True) == [
        "waiting_for_card",
        "tip_selection",
        "pin_entry",
        "processing",
        "authorized",
        "succeeded",
    ]
    assert steps_and_result(2450, False) == [
        "waiting_for_card",
        "pin_entry",
        "processing",
        "authorized",
        "succeeded",
    ]
    assert steps_and_result(2401, False)[-1] == "failed"
    assert steps_and_result(2402, True) == ["waiting_for_card", "canceled"]
    assert steps_and_result(2403, True) == ["waiting_for_card"]
    assert steps_and_result(2404, False)[-2:] == ["authorized", "failed"]
    assert plan("p", 2450, True)[-2] == {"type": "authorized", "payment_id": "p", "tip": 245}
