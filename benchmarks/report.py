"""Turning results into the Markdown of the READMEs (the targets are judged in
``benchmarks.targets``, the chart drawn by ``benchmarks.chart``).

``python -m benchmarks.report RESULTS.json`` renders the top README's table of targets from a
recorded run without running anything; ``--readme README.md`` writes it between that file's
``targets`` markers, ``--full`` renders the results section of ``benchmarks/README.md``
instead (``--readme benchmarks/README.md`` with it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

from benchmarks.figures import by_system, fmt, ratio
from benchmarks.listing.run import listing_table
from benchmarks.sections import sections
from benchmarks.targets import CPU

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
SUMMARY_BEGIN, SUMMARY_END = "<!-- targets:begin -->", "<!-- targets:end -->"


def markdown(results: dict[str, Any], stem: str, chart: bool = True) -> str:
    """The results section of the README (linking the chart at ``stem``.png if ``chart``)."""
    m, v, plan = results["machine"], results["versions"], results["plan"]
    loads = results["load_average"]
    lines = [
        f"Measured {results['started']} ({results['minutes']} min) on {m['cpu']}, "
        f"{m['cores']} cores, {m['memory_gb']} GB, {m['os']}, kernel {m['kernel']}; "
        f"load average (1/5/15 min) {loads['start']} at the start, {loads['end']} at the end.",
        "",
        f"Versions: svc {v.get('svc')} (commit {v.get('commit', '?')}), Python {v.get('python')}, "
        f"RabbitMQ {v.get('rabbitmq', '?')}, PostgreSQL {v.get('postgresql', '?')}, "
        f"Redis {v.get('redis-server', '?')}, receiver nginx {v.get('nginx')}, "
        f"aio-pika {v.get('aio-pika')}, asyncpg {v.get('asyncpg')}, aiohttp "
        f"{v.get('aiohttp')}, uvloop {v.get('uvloop')}, Celery {v.get('celery')}, Dramatiq "
        f"{v.get('dramatiq')}, gevent {v.get('gevent')}, requests {v.get('requests')}.",
        "",
        f"Raw numbers: [`{stem}.json`]({stem}.json)"
        + (f"; chart: [`{stem}.png`]({stem}.png)." if chart else "."),
        "",
        f"**Throughput** (~1 KB events, {plan['endpoints']} endpoints): a backlog of one message "
        "per delivery (delivery jobs for the service) published with the workers stopped, then "
        "drained; rate from the first to the last delivery. *End to end*: a backlog of events "
        "on the events queue instead, drained by dispatchers that fan each event out "
        "themselves (no scheduler): events in, deliveries out. "
        f"{_repeated(plan)}",
        "",
        "| system | events | delivered | deliveries/s | ÷ naive 1 | CPU µs/delivery by process "
        "| every run, deliveries/s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    naive = by_system(results["throughput"]).get("naive1", {}).get("rate_per_s")
    for row in results["throughput"]:
        cpu = " + ".join(
            f"{fmt(val)} {key.rsplit('_', 1)[-1]}"
            for key, val in row.items()
            if key.startswith(CPU)
        )
        lines.append(
            f"| {row['label']} | {fmt(row['events'])} | {fmt(row['delivered'])} | "
            f"{fmt(row['rate_per_s'])} | {fmt(ratio(row['rate_per_s'], naive), 2)} "
            f"| {cpu or '–'} | {_runs(row, 'rate_per_s')} |"
        )
    lines += _slow(by_system(results["throughput"]).get("svc1-slow"))
    lines += _outbox(results.get("outbox"))
    lines += [
        "",
        f"**Latency**: events published at {fmt(plan['rate'])}/s for {fmt(plan['seconds'])} s "
        "to running workers; lag from event creation to receipt.",
        "",
        "| system | events | delivered | p50 ms | p99 ms | max ms | every run, p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    rows = list(results["latency"])
    if results.get("isolation"):
        rows.append(
            {
                **results["isolation"],
                "label": f"svc, 1 dispatcher, {results['isolation']['hanging_endpoints']} of "
                f"{results['isolation']['endpoints']} endpoints hanging (healthy ones)",
            }
        )
    for row in rows:
        lines.append(
            f"| {row['label']} | {fmt(row['healthy_events'])} | "
            f"{fmt(row['delivered'])} | {fmt(row['lag_p50_ms'], 1)} | "
            f"{fmt(row['lag_p99_ms'], 1)} | {fmt(row['lag_max_ms'], 1)} | "
            f"{_runs(row, 'lag_p99_ms')} |"
        )
    storm = results.get("storm")
    if storm:
        lines += [
            "",
            f"**Retry storm** (ladder `{plan['storm_ladder']}`): {fmt(storm['events'])} events "
            f"at {fmt(storm['rate'])}/s while every endpoint answered 503 for "
            f"{fmt(storm['fail_for_s'])} s; {fmt(storm['failed_attempts'])} failed attempts; "
            f"after recovery the backlog drained in {fmt(storm['drain_s'], 1)} s; "
            f"{fmt(storm['delivered'])} of {fmt(storm['events'])} events arrived "
            f"({fmt(storm['duplicates'])} duplicates).",
        ]
    lines += _payments(results.get("payments"))
    lines += listing_table(results.get("listing"))
    for section in sections():
        lines += section.markdown(results.get(section.KEY))
    lines += ["", "| target | measured | goal | met |", "|---|---:|---:|---|"]
    for t in results["targets"]:
        met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        lines.append(f"| {t['target']} | {fmt(t['value'], 2)} | {t['goal']} | {met} |")
    return "\n".join(lines) + "\n"


def _repeated(plan: dict[str, Any]) -> str:
    """What a row of a compared system is when the plan ran them more than once."""
    count = plan.get("repeats", 1)
    if count < 2:
        return ""
    return (
        f"The compared systems (naive, svc, outbox) ran {count} times each, in rounds that run "
        "every one of them in turn; each row is the median run (the worse middle run of an "
        "even count) and the paced rows likewise by p99; peak RSS is the highest of all runs. "
        "The targets of the end-to-end rows against the naive consumer are the medians of "
        "each round's ratio."
    )


def _runs(row: dict[str, Any], key: str) -> str:
    """Every run's figure, in run order, for a row folded from repeats."""
    runs = row.get(f"{key}_runs")
    return " · ".join(fmt(value) for value in runs) if runs else "–"


def _slow(row: dict[str, Any] | None) -> list[str]:
    """What bounded the slow-receiver row: the in-flight settings and what was in flight."""
    if not row or "in_flight_cap" not in row:
        return []
    return [
        "",
        f"**Slow receivers** ({row['label']}): every endpoint answered "
        f"{fmt(row['receiver_delay_ms'])} ms after the request ({row['receiver']}). In flight "
        f"per dispatcher at most min(`SVC_DISPATCHER_CONCURRENCY` "
        f"{fmt(row['dispatcher_concurrency'])}, {fmt(row['endpoints'])} endpoints × "
        f"`SVC_ENDPOINT_CONCURRENCY` {fmt(row['endpoint_concurrency'])}) = "
        f"{fmt(row['in_flight_cap'])}, so at most {fmt(row['rate_cap_per_s'])} deliveries/s; "
        f"measured {fmt(row['rate_per_s'])}/s with {fmt(row['in_flight_peak'])} in flight at "
        f"the peak ({fmt(row['in_flight_median'])} median, sampled every "
        f"{row.get('in_flight_sample_s', 0.25):g} s), "
        f"{fmt(row['counters'].get('deferred', 0))} deferrals, "
        f"{fmt(row['counters'].get('handed_off', 0))} hand-offs; dispatcher peak RSS "
        f"{fmt(row['peak_rss_mb'], 1)} MB.",
    ]


def _outbox(row: dict[str, Any] | None) -> list[str]:
    """The outbox catch-up section: one scheduler sweeping events whose publish was lost."""
    if not row:
        return []
    cpu = " + ".join(
        f"{fmt(val)} {key.rsplit('_', 1)[-1]}"
        for key, val in row.items()
        if key.startswith("cpu_us_per_event_")
    )
    return [
        "",
        f"**Outbox catch-up**: events stored with outbox rows older than "
        f"`SVC_OUTBOX_SWEEP_AGE` ({fmt(row['sweep_age_s'])} s), as if their publishes were "
        "lost, all in one transaction; one running `svc scheduler` publishes them to the events "
        "exchange with confirms (nothing consumes them) and deletes the rows; rate from the "
        "last poll of the outbox that saw every row to the first that saw none.",
        "",
        "| system | events | published | left | events/s | CPU µs/event by process |",
        "|---|---:|---:|---:|---:|---:|",
        f"| {row['label']} | {fmt(row['events'])} | {fmt(row['published'])} | "
        f"{fmt(row['remaining'])} | {fmt(row['rate_per_s'])} | {cpu or '–'} |",
    ]


def _payments(row: dict[str, Any] | None) -> list[str]:
    """The payment-creation section: POST latency, rate and the webhooks that arrived."""
    if not row:
        return []
    cpu = " + ".join(
        f"{fmt(val)} {key.rsplit('_', 1)[-1]}"
        for key, val in row.items()
        if key.startswith("cpu_us_per_payment_")
    )
    return [
        "",
        f"**Payment creation**: `POST /v1/payments` with {fmt(row['concurrency'])} requests in "
        "flight, each with its own `Idempotency-Key`, to one `svc api` process, while a "
        "scheduler and a dispatcher deliver each `payment.created` webhook; latency of the "
        "POST, webhook lag from event creation to receipt.",
        "",
        "| system | payments | payments/s | p50 ms | p99 ms | webhooks delivered "
        "| webhook p99 ms | CPU µs/payment by process |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        f"| {row['label']} | {fmt(row['created'])} | {fmt(row['rate_per_s'])} | "
        f"{fmt(row['p50_ms'], 1)} | {fmt(row['p99_ms'], 1)} | {fmt(row['delivered'])} | "
        f"{fmt(row['webhook_lag_p99_ms'], 1)} | {cpu or '–'} |",
        *_rate_limit(row.get("rate_limit")),
    ]


def _rate_limit(row: dict[str, Any] | None) -> list[str]:
    """What the per-key rate limit costs payment creation: the same API process, a limited
    (live) and an unlimited (test) key in alternating rounds."""
    if not row:
        return []
    return [
        "",
        f"**Rate limiting's cost**: the same `POST /v1/payments` load, {fmt(row['rounds'])} "
        "alternating rounds each with a key whose limit is counted in Redis (far above the "
        "rate, so nothing is refused) and one without a limit; medians.",
        "",
        "| limiting | payments/s | runs |",
        "|---|---:|---|",
        f"| off | {fmt(row['unlimited_per_s'])} | "
        f"{', '.join(fmt(r) for r in row['runs_per_s']['off'])} |",
        f"| on | {fmt(row['limited_per_s'])} | "
        f"{', '.join(fmt(r) for r in row['runs_per_s']['on'])} |",
    ]


def summary(results: dict[str, Any], link: str) -> str:
    """The top README's table: every recorded target with its figure, after one line naming
    the machine and linking the raw numbers at ``link``."""
    m, v = results["machine"], results["versions"]
    lines = [
        f"Recorded by `make bench` on {results['date']}: {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gb']} GB, {m['os']}; svc {v.get('svc')} (commit {v.get('commit', '?')}); "
        f"raw numbers in [`{Path(link).name}`]({link}).",
        "",
        "| target | measured | goal | met |",
        "|---|---:|---:|---|",
    ]
    for t in results["targets"]:
        met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        lines.append(f"| {t['target']} | {_figure(t['value'])} | {t['goal']} | {met} |")
    return "\n".join(lines) + "\n"


def _figure(value: Any) -> str:
    """A target's figure: counts whole, large figures to a tenth, ratios to a hundredth."""
    if isinstance(value, float) and value.is_integer():
        return fmt(int(value))
    if isinstance(value, float):
        return fmt(value, 1 if abs(value) >= 10 else 2)
    return fmt(value)


def update_readme(path: Path, table: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace the text between the markers ``begin`` and ``end`` of ``path``."""
    text = path.read_text()
    block = f"{begin}\n{table}{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{path} has no {begin} … {end} block")
    path.write_text(pattern.sub(lambda _: block, text))


def render(argv: list[str] | None = None) -> int:
    """Render a recorded run's Markdown; print it, or write it into ``--readme``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__)
    parser.add_argument("results", type=Path, help="a results file, benchmarks/results/*.json")
    parser.add_argument("--readme", type=Path, help="README whose block to replace")
    parser.add_argument(
        "--full", action="store_true", help="the results section of benchmarks/README.md"
    )
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    if args.full:
        stem = f"results/{args.results.stem}"
        text = markdown(results, stem, chart=args.results.with_suffix(".png").exists())
        markers = (BEGIN, END)
    else:
        base = args.readme.parent if args.readme else Path.cwd()
        link = Path(os.path.relpath(args.results.resolve(), base.resolve())).as_posix()
        text = summary(results, link)
        markers = (SUMMARY_BEGIN, SUMMARY_END)
    if args.readme:
        update_readme(args.readme, text, *markers)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(render())
