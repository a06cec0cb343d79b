"""Ids: base32hex of 48 bits of milliseconds and 80 random bits, sortable by creation time."""

from __future__ import annotations

import time

from svc.ids import has_prefix, new_id


def test_an_id_is_the_base32hex_of_its_time_and_random_bits() -> None:
    before = int(time.time() * 1000)
    made = new_id("att")
    after = int(time.time() * 1000)
    prefix, _, rest = made.partition("_")
    assert prefix == "att" and len(rest) == 26 and has_prefix(made, "att")
    value = int(rest, 32) >> 2  # base32hex digits are int's; the last 2 of 130 bits are 0
    assert before <= value >> 80 <= after


def test_ids_of_later_milliseconds_sort_after_earlier_ones() -> None:
    first = new_id("evt")
    time.sleep(0.002)
    assert new_id("evt") > first


def test_ids_of_one_process_sort_in_creation_order_within_a_millisecond() -> None:
    made = [new_id("we") for _ in range(10_000)]
    assert made == sorted(made)


def test_ids_differ() -> None:
    assert len({new_id("evt") for _ in range(10_000)}) == 10_000
