"""The long-poll run's sizes, how its payments are dealt to clients, rounds and changes, and
the summary of its latencies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.receipts import percentile


@dataclass(frozen=True, slots=True)
class Sizes:
    waits: int = 10_000
    streams: int = 5_000
    changes: int = 1_000
    spread_s: float = 1.0
    clients: int = 2
    """Client processes; one Python process parsing thousands of answers may be the bottleneck."""
    batch: int = 1_000
    """Connections opened per round (the API's listen backlog is 128: rounds keep SYNs short)."""
    settle_s: float = 1.0
    """Pause between the last opening and the memory reading."""


SMOKE = Sizes(waits=200, streams=100, changes=50, spread_s=0.25, clients=1, batch=200, settle_s=0.2)


def spread(count: int, seconds: float) -> list[float]:
    """Offsets (seconds from the start) of ``count`` changes spread evenly over ``seconds``."""
    return [seconds * i / count for i in range(count)]


def picked(ids: Sequence[str], count: int) -> list[str]:
    """``count`` of ``ids`` spread evenly over the list (so over every client and round)."""
    if count >= len(ids):
        return list(ids)
    return [ids[i * len(ids) // count] for i in range(count)]


def shares(ids: Sequence[str], parts: int) -> list[list[str]]:
    """``ids`` dealt round-robin into ``parts`` lists."""
    return [list(ids[i::parts]) for i in range(parts)]


def rounds(parts: list[list[str]], batch: int) -> list[list[list[str]]]:
    """The opening rounds: each round about ``batch`` ids in all, taken from every part."""
    total = sum(len(part) for part in parts)
    count = max(1, -(-total // batch))
    return [
        [part[len(part) * r // count : len(part) * (r + 1) // count] for part in parts]
        for r in range(count)
    ]


def latencies_ms(committed: dict[str, float], answered: dict[str, float]) -> list[float]:
    """Answer time minus commit time of each changed payment that was answered, in ms."""
    return [(answered[p] - at) * 1000 for p, at in committed.items() if p in answered]


def summary(values: list[float]) -> dict[str, float | int | None]:
    """p50 / p90 / p99 / max (ms, nearest rank) and the count."""
    if not values:
        return {"count": 0, "p50_ms": None, "p90_ms": None, "p99_ms": None, "max_ms": None}
    return {
        "count": len(values),
        "p50_ms": round(percentile(values, 50), 1),
        "p90_ms": round(percentile(values, 90), 1),
        "p99_ms": round(percentile(values, 99), 1),
        "max_ms": round(max(values), 1),
    }
