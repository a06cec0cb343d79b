"""Payload filters: what each operator keeps, how missing paths and mixed types behave, the
bounds, and that a condition is never slower than its size allows (Hypothesis)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from svc.webhooks.filters import MAX_NODES, FilterError, compile_filter, meets

ENVELOPE = {
    "type": "payment.succeeded",
    "data": {
        "amount": 12000,
        "currency": "CHF",
        "channel": "terminal",
        "terminal_id": "trm_1",
        "tip": None,
        "captured": True,
        "created_at": "2026-11-28T08:00:00.000Z",
    },
}


@pytest.mark.parametrize(
    ("condition", "kept"),
    [
        ({}, True),
        ({"data.amount": 12000}, True),
        ({"data.amount": 12001}, False),
        ({"data.amount": {"$gte": 10000}}, True),
        ({"data.amount": {"$gt": 12000}}, False),
        ({"data.amount": {"$lt": 12000.5}}, True),
        ({"data.amount": {"$lte": 11999}}, False),
        ({"data.amount": {"$gte": 10000, "$lt": 20000}}, True),
        ({"data.amount": {"$gte": "10000"}}, False),  # a number never compares with a string
        ({"data.created_at": {"$gte": "2026-11-28T00:00:00Z"}}, True),
        ({"data.channel": {"$in": ["online", "terminal"]}}, True),
        ({"data.channel": {"$nin": ["online", "terminal"]}}, False),
        ({"data.channel": {"$ne": "online"}}, True),
        ({"data.missing": {"$ne": "x"}}, True),  # a missing path equals nothing
        ({"data.missing": {"$nin": ["x"]}}, True),
        ({"data.missing": "x"}, False),
        ({"data.missing": None}, False),
        ({"data.tip": None}, True),
        ({"data.tip": {"$exists": True}}, True),
        ({"data.missing": {"$exists": False}}, True),
        ({"data.amount.deeper": {"$exists": True}}, False),
        ({"data.captured": True}, True),
        ({"data.captured": 1}, False),  # true is not 1
        ({"data.amount": True}, False),
        ({"$or": [{"data.channel": "online"}, {"data.terminal_id": "trm_1"}]}, True),
        ({"$and": [{"data.channel": "terminal"}, {"data.amount": {"$lt": 100}}]}, False),
        ({"type": "payment.succeeded", "data.currency": "CHF"}, True),
    ],
)
def test_each_operator_keeps_what_it_says(condition: dict[str, Any], kept: bool) -> None:
    assert compile_filter(condition)(ENVELOPE) is kept
    assert meets(condition, orjson.dumps(ENVELOPE)) is kept


@pytest.mark.parametrize(
    ("condition", "where"),
    [
        ({"data.amount": {"$regex": "1"}}, ("data.amount", "$regex")),
        ({"$nor": []}, ("$nor",)),
        ({"$or": [{"a": 1}, 5]}, ("$or", "1")),
        ({"a..b": 1}, ("a..b",)),
        ({"a": {"$in": [1, [2]]}}, ("a", "$in", "1")),
        ({"a": {"$lt": None}}, ("a", "$lt")),
        ({"a": {"b": 1}}, ("a",)),
        ({"a": {"$eq": 1, "b": 2}}, ("a",)),
    ],
)
def test_a_bad_part_is_named(condition: dict[str, Any], where: tuple[str, ...]) -> None:
    with pytest.raises(FilterError) as raised:
        compile_filter(condition)
    assert raised.value.where == where


def test_a_filter_is_bounded() -> None:
    wide = {f"data.f{i}": i for i in range(MAX_NODES + 1)}
    with pytest.raises(FilterError, match="at most"):
        compile_filter(wide)
    deep: dict[str, Any] = {"a": 1}
    for _ in range(10):
        deep = {"$and": [deep]}
    with pytest.raises(FilterError, match="nests"):
        compile_filter(deep)


def test_a_body_that_cannot_be_read_is_let_through() -> None:
    assert meets({"data.amount": 1}, b"not json")
    assert meets({"$bad": 1}, orjson.dumps(ENVELOPE))
    assert meets(None, b"")


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text())


@given(value=scalars, operand=scalars)
def test_equality_and_its_negation_never_both_hold(value: Any, operand: Any) -> None:
    envelope = {"data": {"v": value}}
    eq = compile_filter({"data.v": {"$eq": operand}})(envelope)
    ne = compile_filter({"data.v": {"$ne": operand}})(envelope)
    assert eq is not ne
