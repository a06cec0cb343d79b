"""The results as Markdown; ``python -m benchmarks.report RESULTS.json [--readme
README.md]`` renders the top README's table of targets of a recorded run."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from benchmarks.figures import by_system, fmt, ratio
from benchmarks.listing.run import listing_table
from benchmarks.sections import sections, table
from harness.results import update_readme

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
SUMMARY_BEGIN, SUMMARY_END = "<!-- targets:begin -->", "<!-- targets:end -->"
MET = {True: "yes", False: "**no**", None: "not measured"}


def _cpu(row: dict[str, Any], prefix: str = "cpu_us_per_delivery_") -> str:
    """``275 worker + 104 broker …``: the CPU per delivery charged to each group."""
    cpu = [f"{fmt(v)} {k.removeprefix(prefix)}" for k, v in row.items() if k.startswith(prefix)]
    return " + ".join(cpu) or "–"


def _targets(results: dict[str, Any]) -> list[str]:
    rows = (
        f"| {t['target']} | {_figure(t['value'], t['met'])} | {t['goal']} | {MET[t['met']]} |"
        for t in results["targets"]
    )
    return ["", "| target | measured | goal | met |", "|---|---:|---:|---|", *rows]


def _figure(value: Any, met: bool | None) -> str:
    """A target's figure: counts whole, large figures to a tenth, ratios to a hundredth, but
    a missed one to a thousandth (0.948 against ≥ 0.95 is no 0.95)."""
    if isinstance(value, float) and not value.is_integer():
        return fmt(value, 1 if abs(value) >= 10 else 2 if met is not False else 3)
    return fmt(int(value) if isinstance(value, float) else value)


def markdown(results: dict[str, Any], stem: str) -> str:
    """The results section of ``benchmarks/README.md``, linking the results file ``stem``.json."""
    m, plan, loads = results["machine"], results["plan"], results["load_average"]
    versions = ", ".join(f"{name} {version}" for name, version in results["versions"].items())
    naive = by_system(results["throughput"]).get("naive1", {}).get("rate_per_s")
    paced = list(results["latency"])
    if iso := results.get("isolation"):
        hanging = f"{iso['hanging_endpoints']} of {iso['endpoints']} endpoints hanging"
        paced.append({**iso, "label": f"svc, 1 dispatcher, {hanging} (healthy ones)"})
    medians = " Systems run in rounds show their median run." if plan["repeats"] > 1 else ""
    lines = [
        f"Measured {results['started']} ({results['minutes']} min) on {m['cpu']}, "
        f"{m['cores']} cores, {m['memory_gb']} GB, {m['os']}, kernel {m['kernel']}; load "
        f"average (1/5/15 min) {loads['start']} at the start, {loads['end']} at the end.",
        "",
        f"Versions: {versions}.",
        "",
        f"Raw numbers: [`{stem}.json`]({stem}.json).",
        "",
        f"**Throughput**, {plan['endpoints']} endpoints: backlogs drained, delivery jobs or "
        f"(end to end) events.{medians}",
        "",
        *table(
            "system | events | delivered | deliveries/s | ÷ naive 1 | CPU µs/delivery by process",
            (
                [r["label"], fmt(r["events"]), fmt(r["delivered"]), fmt(r["rate_per_s"])]
                + [fmt(ratio(r["rate_per_s"], naive), 2), _cpu(r)]
                for r in results["throughput"]
            ),
        ),
        f"**Latency**: {fmt(plan['rate'])} events/s for {fmt(plan['seconds'])} s to running "
        "workers; lag from event creation to receipt.",
        "",
        *table(
            "system | events | delivered | p50 ms | p99 ms | max ms",
            (
                [r["label"], fmt(r["healthy_events"]), fmt(r["delivered"])]
                + [fmt(r[f"lag_{q}_ms"], 1) for q in ("p50", "p99", "max")]
                for r in paced
            ),
        ),
    ]
    if row := results.get("outbox"):
        cells = [row["label"], fmt(row["events"]), fmt(row["rate_per_s"])]
        lines += table("outbox catch-up | events | events/s", [cells])
    if storm := results.get("storm"):
        lines += [
            f"**Retry storm** (ladder `{plan['storm_ladder']}`): {fmt(storm['events'])} events "
            f"while every endpoint answered 503 for {fmt(plan['storm_fail_for'])} s "
            f"({fmt(storm['failed_attempts'])} failed attempts); drained "
            f"{fmt(storm['drain_s'], 1)} s after recovery; {fmt(storm['delivered'])} arrived, "
            f"{fmt(storm['duplicates'])} twice.",
            "",
        ]
    lines += listing_table(results.get("listing"))
    for section in sections():
        lines += section.markdown(results.get(section.KEY))
    return "\n".join([*lines, *_targets(results)]) + "\n"


def summary(results: dict[str, Any], link: str) -> str:
    """The top README's table of targets under a line naming the machine and linking ``link``."""
    m, v = results["machine"], results["versions"]
    head = (
        f"Recorded by `make bench` on {results['date']}: {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gb']} GB, {m['os']}; svc {v.get('svc')} (commit {v.get('commit', '?')}); "
        f"raw numbers in [`{Path(link).name}`]({link})."
    )
    return "\n".join([head, *_targets(results)]) + "\n"


def render(argv: list[str] | None = None) -> int:
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
