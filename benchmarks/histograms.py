"""Prometheus histograms and counters read from the ``/metrics`` pages of the service's
processes, and what changed between two readings."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True, slots=True)
class Histogram:
    """A histogram's cumulative buckets (upper bound, count; ``+Inf`` last), sum and count."""

    buckets: tuple[tuple[float, float], ...]
    total: float
    count: float

    def minus(self, before: Histogram) -> Histogram:
        """What was observed since ``before`` (the same series, read earlier)."""
        earlier = dict(before.buckets)
        return Histogram(
            tuple((le, n - earlier.get(le, 0.0)) for le, n in self.buckets),
            self.total - before.total,
            self.count - before.count,
        )

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan

    def quantile(self, q: float) -> float:
        """The ``q`` quantile (0..1) interpolated within its bucket, as PromQL's
        ``histogram_quantile``; the highest finite bound when it falls past it."""
        if not self.count:
            return math.nan
        rank = q * self.count
        lower, below = 0.0, 0.0
        for upper, cumulative in self.buckets:
            if cumulative >= rank and cumulative > below:
                if math.isinf(upper):
                    return lower
                return lower + (upper - lower) * (rank - below) / (cumulative - below)
            lower, below = upper, cumulative
        return lower


def added(histograms: Iterable[Histogram]) -> Histogram:
    """Histograms with the same buckets (one series per process) as one."""
    buckets: dict[float, float] = {}
    total = count = 0.0
    for histogram in histograms:
        for le, n in histogram.buckets:
            buckets[le] = buckets.get(le, 0.0) + n
        total += histogram.total
        count += histogram.count
    return Histogram(tuple(sorted(buckets.items())), total, count)


def read_histogram(page: str, name: str, **labels: str) -> Histogram:
    """Histogram ``name`` in a ``/metrics`` page, its series with ``labels`` added up."""
    buckets: dict[float, float] = {}
    total = count = 0.0
    for family in text_string_to_metric_families(page):
        if family.name != name:
            continue
        for sample in family.samples:
            if any(sample.labels.get(k) != v for k, v in labels.items()):
                continue
            if sample.name == f"{name}_bucket":
                le = float(sample.labels["le"])
                buckets[le] = buckets.get(le, 0.0) + sample.value
            elif sample.name == f"{name}_sum":
                total += sample.value
            elif sample.name == f"{name}_count":
                count += sample.value
    return Histogram(tuple(sorted(buckets.items())), total, count)


def read_counter(page: str, name: str) -> float:
    """Counter ``name`` (without ``_total``) in a ``/metrics`` page, every series added up."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(page)
        if family.name == name
        for sample in family.samples
        if sample.name == f"{name}_total"
    )


def histogram_since(
    before: Mapping[str, str], after: Mapping[str, str], name: str, **labels: str
) -> Histogram:
    """What histogram ``name`` counted between two readings of every process's page (by
    process name; a process absent before counts from zero)."""
    return added(
        read_histogram(page, name, **labels).minus(
            read_histogram(before.get(process, ""), name, **labels)
        )
        for process, page in after.items()
    )


def counter_since(before: Mapping[str, str], after: Mapping[str, str], name: str) -> float:
    """What counter ``name`` counted between two readings of every process's page."""
    return sum(
        read_counter(page, name) - read_counter(before.get(process, ""), name)
        for process, page in after.items()
    )
