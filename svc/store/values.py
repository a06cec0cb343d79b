"""Narrowing redis-py's loosely typed replies (``bytes | str | ...``) to what we stored."""

from __future__ import annotations

from typing import Any


def text(value: Any) -> str:
    """A reply holding text; we never set ``decode_responses``, so it arrives as bytes."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a Redis string reply, got {type(value).__name__}")


def blob(value: Any) -> bytes:
    """A reply holding bytes."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise TypeError(f"expected a Redis string reply, got {type(value).__name__}")
