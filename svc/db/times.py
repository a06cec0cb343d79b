"""Milliseconds since the epoch (the kernel's unit): now, and to and from PostgreSQL
timestamptz."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def now_ms() -> int:
    return int(time.time() * 1000)


def to_dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def to_ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def opt_dt(ms: int | None) -> datetime | None:
    return None if ms is None else to_dt(ms)


def opt_ms(moment: datetime | None) -> int | None:
    return None if moment is None else to_ms(moment)
