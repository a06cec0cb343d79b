"""What a PromQL expression refers to: metric names and the label names used with each."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?")
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_RANGE = re.compile(r"\[[^\]]*\]")
_HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")
_COUNTER_SUFFIXES = ("_total", "_created")


@dataclass
class Refs:
    """Metric names, and per metric the label names of its matchers; grouping labels apart."""

    metrics: dict[str, set[str]] = field(default_factory=dict)
    matchers: list[tuple[str, str, str, str]] = field(default_factory=list)
    grouping: set[str] = field(default_factory=set)


def refs(expr: str, prefix: str = "svc_") -> Refs:
    """Every ``prefix`` metric in ``expr`` with its matcher labels, and every grouping label."""
    found = Refs()
    body = _RANGE.sub("", expr)
    for match in _GROUPING.finditer(body):
        found.grouping.update(n.strip() for n in match.group(1).split(",") if n.strip())
    for match in _SELECTOR.finditer(_STRING.sub('""', body)):
        name = match.group(1)
        if not name.startswith(prefix):
            continue
        found.metrics.setdefault(name, set())
    # Matchers are read from the original text: their values are strings.
    for match in re.finditer(r"\b(" + prefix + r"[a-zA-Z0-9_:]*)\s*\{([^}]*)\}", body):
        name = match.group(1)
        for label, op, value in _MATCHER.findall(match.group(2)):
            found.metrics[name].add(label)
            found.matchers.append((name, label, op, value))
    return found


@dataclass(frozen=True)
class Exported:
    """Sample names the code exports, each with its label names."""

    labels: dict[str, frozenset[str]]

    @classmethod
    def of(cls, registry: CollectorRegistry) -> Exported:
        """Walk ``registry``: family names become the sample names Prometheus stores."""
        labels: dict[str, frozenset[str]] = {}
        collectors = registry._names_to_collectors  # the registry's own index of collectors
        for family in registry.collect():
            collector = collectors.get(family.name) or collectors.get(family.name + "_total")
            names = set(getattr(collector, "_labelnames", ()))
            for sample in family.samples:
                names.update(sample.labels)
            names.discard("le")
            for sample_name in _sample_names(family.name, family.type):
                extra = {"le"} if sample_name.endswith("_bucket") else set()
                labels[sample_name] = frozenset(names | extra)
        return cls(labels)


def _sample_names(name: str, kind: str) -> tuple[str, ...]:
    if kind == "counter":
        return tuple(name + s for s in _COUNTER_SUFFIXES)
    if kind == "histogram":
        return (*(name + s for s in _HISTOGRAM_SUFFIXES), name + "_created")
    if kind == "info":
        return (name + "_info",)
    return (name,)
