"""The receivers' access logs read back as receipts, filed under their run, and summarised."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Receipt:
    """One request as a receiver logged it; ``took_ms``: the receiver's time over it."""

    at_ms: float
    status: int
    path: str
    event_id: str
    signed: bool
    took_ms: float = 0.0

    @property
    def run(self) -> str:
        return self.path.split("/", 2)[1] if self.path.count("/") >= 2 else ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status <= 299 and self.signed


def parse_line(line: str) -> Receipt | None:
    try:
        at, status, _length, path, event_id, signature, took = line.split()
        signed = signature.startswith("t=") and ",v1=" in signature
        return Receipt(float(at) * 1000, int(status), path, event_id, signed, float(took) * 1000)
    except ValueError:  # a line cut short or not of the format
        return None


class AccessLog:
    """Reads a receiver's access log as it grows."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._offset = 0
        self._partial = b""
        self.runs: dict[str, list[Receipt]] = defaultdict(list)
        self.first_ok: dict[str, dict[str, Receipt]] = defaultdict(dict)

    def poll(self) -> None:
        """Read whatever was appended since the last call."""
        if not self._path.exists():
            return
        with self._path.open("rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        self._offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for raw in lines:
            if (receipt := parse_line(raw.decode("utf-8", "replace"))) is None:
                continue
            self.runs[receipt.run].append(receipt)
            if receipt.ok:
                self.first_ok[receipt.run].setdefault(receipt.event_id, receipt)

    def all_arrived(self, run: str, ids: AbstractSet[str]) -> bool:
        """Every one of ``ids`` arrived signed with a 2xx under ``run`` (the cheap count first)."""
        arrived = self.first_ok.get(run, {})
        return len(arrived) >= len(ids) and arrived.keys() >= ids


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of ``values``; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def spread(values: list[float]) -> dict[str, float]:
    """p50, p99 and max of milliseconds, rounded to tenths (NaN when there are none)."""
    p50, p99 = (round(percentile(values, q), 1) for q in (50, 99))
    return {"p50_ms": p50, "p99_ms": p99, "max_ms": round(max(values, default=math.nan), 1)}


def rate_summary(arrived: list[Receipt]) -> dict[str, float]:
    """Deliveries per second from the first receipt to the last."""
    times = [r.at_ms for r in arrived]
    span = (max(times) - min(times)) / 1000 if len(times) > 1 else 0.0
    rate = round((len(times) - 1) / span, 1) if span > 0 else math.nan
    return {"rate_per_s": rate, "duration_s": round(span, 3)}
