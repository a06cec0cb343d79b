"""The amount rules of payment forms: integer Rappen from 1 to 99,999,999."""

from __future__ import annotations

import pytest

from api.input.payments import MAX_AMOUNT, amount
from api.problems import FieldError


def codes(raw: str) -> tuple[int, list[str]]:
    errors: list[FieldError] = []
    value = amount({"amount": raw}, errors)
    assert all(e.field == "amount" for e in errors)
    return value, [e.code for e in errors]


@pytest.mark.parametrize(
    ("raw", "value"), [("1", 1), ("2450", 2450), ("002450", 2450), ("99999999", MAX_AMOUNT)]
)
def test_whole_rappen_in_range(raw: str, value: int) -> None:
    assert codes(raw) == (value, [])


@pytest.mark.parametrize(
    "raw",
    ["0", "000", "-0", "-5", "-99999999", "100000000", "0100000000", "1" + "0" * 30, "9" * 5000],
)
def test_whole_numbers_outside_the_range_are_out_of_range(raw: str) -> None:
    assert codes(raw)[1] == ["out_of_range"]


@pytest.mark.parametrize("raw", ["24.50", "24,50", "-24.50", "1.", ".5"])
def test_decimals_are_not_integer(raw: str) -> None:
    assert codes(raw)[1] == ["not_integer"]


@pytest.mark.parametrize("raw", ["abc", "1e3", "+5", "--5", "5-", "-", " 5", "\u0662\u0664"])
def test_other_text_is_invalid_integer(raw: str) -> None:
    assert codes(raw)[1] == ["invalid_integer"]


def test_missing_amount_is_required() -> None:
    assert codes("")[1] == ["required"]
