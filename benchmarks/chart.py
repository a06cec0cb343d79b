"""The results as one PNG: throughput, latency, isolation and the retry storm's timeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.figures import by_system, missing


def chart(results: dict[str, Any], path: Path) -> None:
    """Throughput, latency, isolation and the storm timeline in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ((ax1, ax2), (ax3, ax4)) = plt.subplots(2, 2, figsize=(13, 8.5))
    tp = [*results["throughput"], *([results["outbox"]] if results.get("outbox") else [])]
    colours = ["#999933" if r["system"] == "outbox" else "#4477aa" for r in tp]
    rates = [0 if missing(r.get("rate_per_s")) else r["rate_per_s"] for r in tp]
    ax1.barh([r["label"] for r in tp], rates, color=colours)
    ax1.invert_yaxis()
    ax1.set_xlabel("deliveries/s (outbox sweep: events published/s)")
    ax1.set_title("Throughput")
    lat = [r for r in results["latency"] if r["lag_p50_ms"] > 0 and r["lag_p99_ms"] > 0]
    if lat:
        y = range(len(lat))
        ax2.barh([i - 0.2 for i in y], [r["lag_p50_ms"] for r in lat], 0.4, label="p50")
        ax2.barh([i + 0.2 for i in y], [r["lag_p99_ms"] for r in lat], 0.4, label="p99")
        ax2.set_yticks(list(y), [r["label"] for r in lat])
        ax2.invert_yaxis()
        ax2.set_xscale("log")
        ax2.set_xlabel(f"lag ms at {results['plan']['rate']:.0f} events/s (log scale)")
        ax2.legend()
    ax2.set_title("Latency")
    iso = results.get("isolation")
    healthy = by_system(lat).get("svc1")
    if iso and healthy:
        names = ["all healthy", f"{iso['hanging_endpoints']} of {iso['endpoints']} hanging"]
        for offset, key in ((-0.2, "lag_p50_ms"), (0.2, "lag_p99_ms")):
            ax3.bar([offset, 1 + offset], [healthy[key], iso[key]], 0.4, label=key[4:7])
        ax3.set_xticks([0, 1], names)
        ax3.set_ylabel("healthy endpoints' lag, ms")
        ax3.legend()
    ax3.set_title("Isolation (svc, 1 dispatcher)")
    storm = results.get("storm")
    if storm and storm["timeline"]:
        seconds = [row[0] for row in storm["timeline"]]
        ax4.bar(
            seconds,
            [row[1] for row in storm["timeline"]],
            1,
            align="edge",
            color="#cc6677",
            label="503",
        )
        ax4.bar(
            seconds,
            [row[2] for row in storm["timeline"]],
            1,
            align="edge",
            bottom=[row[1] for row in storm["timeline"]],
            color="#117733",
            label="2xx",
        )
        ax4.axvline(0, color="black", linewidth=1)
        ax4.set_xlabel("seconds from recovery")
        ax4.set_ylabel("answers per second")
        ax4.legend()
    ax4.set_title("Retry storm")
    fig.suptitle(f"svc webhook delivery benchmarks, {results['date']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
