"""Opaque cursors: what the service hands out comes back; anything else is refused."""

from __future__ import annotations

import pytest

from svc import cursors
from svc.errors import InvalidCursor


def test_round_trip() -> None:
    text = cursors.encode(1_763_900_000_123, "att_06h0gabhudaeb6gedesiilovoo")
    assert cursors.decode(text) == (1_763_900_000_123, "att_06h0gabhudaeb6gedesiilovoo")
    assert "att_" not in text  # opaque to clients


@pytest.mark.parametrize(
    "text", ["", "abc", "0-0", "1-2", "MTIz", "MTIzOg", "OjA", "x" * 121, "MTox\n", "MTp4IHk"]
)
def test_foreign_text_is_invalid(text: str) -> None:
    with pytest.raises(InvalidCursor):
        cursors.decode(text)
