"""The results as Markdown (the top README's table of targets, the results section of
``benchmarks/README.md``) and as one chart.

``python -m benchmarks.report RESULTS.json`` renders the top README's table from a recorded
run; ``--readme README.md`` writes it between that file's ``targets`` markers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

from benchmarks.figures import by_system, fmt, missing, ratio
from benchmarks.listing.run import listing_table
from benchmarks.sections import sections, table

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
SUMMARY_BEGIN, SUMMARY_END = "<!-- targets:begin -->", "<!-- targets:end -->"
MET = {True: "yes", False: "**no**", None: "not measured"}


def _cpu(row: dict[str, Any], prefix: str) -> str:
    """``275 worker + 104 broker …``: the CPU per unit of work charged to each group."""
    cpu = [
        f"{fmt(v)} {key.removeprefix(prefix)}" for key, v in row.items() if key.startswith(prefix)
    ]
    return " + ".join(cpu) or "–"


def _runs(row: dict[str, Any], key: str) -> str:
    """Every run's figure, in run order, for a row folded from repeats."""
    return " · ".join(fmt(value) for value in row.get(f"{key}_runs", [])) or "–"


def _repeated(plan: dict[str, Any]) -> str:
    if plan.get("repeats", 1) < 2:
        return ""
    return (
        f" The compared systems (naive, svc, outbox) ran {plan['repeats']} times each, in "
        "rounds; each row is the median run, the paced rows by p99."
    )


def _targets(results: dict[str, Any]) -> list[str]:
    return [
        "",
        "| target | measured | goal | met |",
        "|---|---:|---:|---|",
        *(
            f"| {t['target']} | {_figure(t['value'])} | {t['goal']} | {MET[t['met']]} |"
            for t in results["targets"]
        ),
    ]


def markdown(results: dict[str, Any], stem: str, chart: bool = True) -> str:
    """The results section of ``benchmarks/README.md`` (linking the chart at ``stem``.png)."""
    m, plan, loads = results["machine"], results["plan"], results["load_average"]
    versions = ", ".join(f"{name} {version}" for name, version in results["versions"].items())
    tp, storm, pay = results["throughput"], results.get("storm"), results.get("payments")
    naive = by_system(tp).get("naive1", {}).get("rate_per_s")
    paced = list(results["latency"])
    if iso := results.get("isolation"):
        hanging = f"{iso['hanging_endpoints']} of {iso['endpoints']} endpoints hanging"
        paced.append({**iso, "label": f"svc, 1 dispatcher, {hanging} (healthy ones)"})
    lines = [
        f"Measured {results['started']} ({results['minutes']} min) on {m['cpu']}, "
        f"{m['cores']} cores, {m['memory_gb']} GB, {m['os']}, kernel {m['kernel']}; load "
        f"average (1/5/15 min) {loads['start']} at the start, {loads['end']} at the end.",
        "",
        f"Versions: {versions}.",
        "",
        f"Raw numbers: [`{stem}.json`]({stem}.json)"
        + (f"; chart: [`{stem}.png`]({stem}.png)." if chart else "."),
        "",
        f"**Throughput**, {plan['endpoints']} endpoints: backlogs drained, delivery jobs or "
        f"(end to end) events.{_repeated(plan)}",
        "",
        *table(
            "system | events | delivered | deliveries/s | ÷ naive 1 | CPU µs/delivery by "
            "process | every run, deliveries/s",
            (
                [r["label"], fmt(r["events"]), fmt(r["delivered"]), fmt(r["rate_per_s"])]
                + [fmt(ratio(r["rate_per_s"], naive), 2), _cpu(r, "cpu_us_per_delivery_")]
                + [_runs(r, "rate_per_s")]
                for r in tp
            ),
        ),
        f"**Latency**: {fmt(plan['rate'])} events/s for {fmt(plan['seconds'])} s to running "
        "workers; lag from event creation to receipt.",
        "",
        *table(
            "system | events | delivered | p50 ms | p99 ms | max ms | every run, p99 ms",
            (
                [r["label"], fmt(r["healthy_events"]), fmt(r["delivered"])]
                + [fmt(r[f"lag_{q}_ms"], 1) for q in ("p50", "p99", "max")]
                + [_runs(r, "lag_p99_ms")]
                for r in paced
            ),
        ),
    ]
    if (slow := by_system(tp).get("svc1-slow")) and "in_flight_cap" in slow:
        lines.append(
            f"**Slow receivers** ({slow['receiver']}): at most {fmt(slow['in_flight_cap'])} in "
            f"flight (`SVC_DISPATCHER_CONCURRENCY` {fmt(slow['dispatcher_concurrency'])}, "
            f"{fmt(slow['endpoints'])} endpoints × `SVC_ENDPOINT_CONCURRENCY` "
            f"{fmt(slow['endpoint_concurrency'])}), so at most {fmt(slow['rate_cap_per_s'])} "
            f"deliveries/s; {fmt(slow['counters'].get('deliveries_deferred', 0))} deferrals, "
            f"{fmt(slow['counters'].get('deliveries_handed_off', 0))} hand-offs."
        )
        lines.append("")
    if row := results.get("outbox"):
        lines += [
            f"**Outbox catch-up** (rows {fmt(row['sweep_age_s'])} s past the sweep age):",
            "",
            *table(
                "system | events | published | left | events/s | CPU µs/event by process",
                [
                    [row["label"], fmt(row["events"]), fmt(row["published"])]
                    + [fmt(row["remaining"]), fmt(row["rate_per_s"])]
                    + [_cpu(row, "cpu_us_per_event_")]
                ],
            ),
        ]
    if storm:
        lines.append(
            f"**Retry storm** (ladder `{plan['storm_ladder']}`): {fmt(storm['events'])} events "
            f"at {fmt(storm['rate'])}/s while every endpoint answered 503 for "
            f"{fmt(storm['fail_for_s'])} s; {fmt(storm['failed_attempts'])} failed attempts; "
            f"drained {fmt(storm['drain_s'], 1)} s after recovery; {fmt(storm['delivered'])} "
            f"arrived ({fmt(storm['duplicates'])} duplicates)."
        )
        lines.append("")
    if pay:
        limit = pay.get("rate_limit") or {}
        lines += [
            f"**Payment creation**, {fmt(pay['concurrency'])} in flight; rate limiting on ÷ off "
            f"over {fmt(limit.get('rounds'))} rounds: {fmt(limit.get('limited_ratio'), 2)}.",
            "",
            *table(
                "system | payments | payments/s | p50 ms | p99 ms | webhooks delivered | webhook "
                "p99 ms | CPU µs/payment by process",
                [
                    [pay["label"], fmt(pay["created"]), fmt(pay["rate_per_s"])]
                    + [fmt(pay["p50_ms"], 1), fmt(pay["p99_ms"], 1), fmt(pay["delivered"])]
                    + [fmt(pay["webhook_lag_p99_ms"], 1), _cpu(pay, "cpu_us_per_payment_")]
                ],
            ),
        ]
    lines += listing_table(results.get("listing"))
    for section in sections():
        lines += section.markdown(results.get(section.KEY))
    lines += _targets(results)
    return "\n".join(lines) + "\n"


def summary(results: dict[str, Any], link: str) -> str:
    """The top README's table: every target with its figure, after one line naming the
    machine and linking the raw numbers at ``link``."""
    m, v = results["machine"], results["versions"]
    head = (
        f"Recorded by `make bench` on {results['date']}: {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gb']} GB, {m['os']}; svc {v.get('svc')} (commit {v.get('commit', '?')}); "
        f"raw numbers in [`{Path(link).name}`]({link})."
    )
    return "\n".join([head, *_targets(results)]) + "\n"


def _figure(value: Any) -> str:
    """A target's figure: counts whole, large figures to a tenth, ratios to a hundredth."""
    if isinstance(value, float) and value.is_integer():
        return fmt(int(value))
    if isinstance(value, float):
        return fmt(value, 1 if abs(value) >= 10 else 2)
    return fmt(value)


def chart(results: dict[str, Any], path: Path) -> None:
    """Throughput and latency (isolation's healthy endpoints among it) in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    tp = [*results["throughput"], *([results["outbox"]] if results.get("outbox") else [])]
    rates = [0 if missing(r.get("rate_per_s")) else r["rate_per_s"] for r in tp]
    ax1.barh([r["label"] for r in tp], rates)
    ax1.invert_yaxis()
    ax1.set(xlabel="deliveries/s (outbox sweep: events published/s)", title="Throughput")
    paced = [*results["latency"], *([results["isolation"]] if results.get("isolation") else [])]
    lat = [r for r in paced if r["lag_p50_ms"] > 0 and r["lag_p99_ms"] > 0]
    if lat:
        for offset, key in ((-0.2, "lag_p50_ms"), (0.2, "lag_p99_ms")):
            y = [i + offset for i in range(len(lat))]
            ax2.barh(y, [r[key] for r in lat], 0.4, label=key[4:7])
        labels = [r["label"] + (" (isolation)" if r.get("hanging_endpoints") else "") for r in lat]
        ax2.set_yticks(range(len(lat)), labels)
        ax2.invert_yaxis()
        ax2.set(xscale="log", xlabel=f"lag ms at {results['plan']['rate']:.0f} events/s")
        ax2.legend()
    ax2.set_title("Latency")
    fig.suptitle(f"svc webhook delivery benchmarks, {results['date']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def update_readme(path: Path, text: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace the text between the markers ``begin`` and ``end`` of ``path``."""
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.DOTALL)
    readme = path.read_text()
    if not pattern.search(readme):
        raise ValueError(f"{path} has no {begin} … {end} block")
    path.write_text(pattern.sub(lambda _: f"{begin}\n{text}{end}", readme))


def render(argv: list[str] | None = None) -> int:
    """Render a recorded run's table of targets; print it, or write it into ``--readme``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__)
    parser.add_argument("results", type=Path, help="a results file, benchmarks/results/*.json")
    parser.add_argument("--readme", type=Path, help="README whose block to replace")
    args = parser.parse_args(argv)
    base = args.readme.parent if args.readme else Path.cwd()
    link = Path(os.path.relpath(args.results.resolve(), base.resolve())).as_posix()
    text = summary(json.loads(args.results.read_text()), link)
    if args.readme:
        update_readme(args.readme, text, SUMMARY_BEGIN, SUMMARY_END)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(render())
