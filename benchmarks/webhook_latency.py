"""Payment to webhook (section of ``make bench``; see ``benchmarks.sections``): the time from
the API's 201 for a payment to the receiver getting its ``payment.created`` webhook.

One ``svc api`` process, a scheduler and one dispatcher on the run's own database, one
endpoint at the nginx receiver. The API's capacity is measured first (``post_payments`` at
``CAPACITY_CONCURRENCY`` in flight), then payments are created at half of it, paced, each
request on its own schedule whatever the others wait for. A payment's latency runs from the
client's clock right after it read the 201 to the receiver's log time of the webhook (nginx
``$msec``: the millisecond its event loop woke for the request); both are this machine's
wall clock.

The breakdown follows the event: created (the API's clock, before its ``INSERT``), taken from
the fan-out queue by the dispatcher (``svc_event_wait_seconds``: store, commit, publish and
queue wait), sent (the rest of ``svc_delivery_lag_seconds`` before the POST), answered
(``svc_delivery_duration_seconds``), each histogram read as the difference of the process's
``/metrics`` before and after the paced run.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from benchmarks.histograms import Histogram, counter_since, histogram_since
from benchmarks.payments import FORM, delivered, post_payments, shop
from benchmarks.receipts import Receipt, percentile
from benchmarks.runs import Bench
from benchmarks.sections import Goal, Run
from benchmarks.service import ServiceSystem
from benchmarks.workload import paced

KEY = "webhook-latency"
log = logging.getLogger(__name__)

TARGET_P99_MS = 25.0
CAPACITY_CONCURRENCY = 32
SECONDS, SMOKE_SECONDS = 60.0, 2.0
CAPACITY, SMOKE_CAPACITY = 3_000, 40
"""Payments of the capacity measurement (a few seconds of one API process at full load)."""
WARM_UP, SMOKE_WARM_UP = 100, 8
SETTLE = 3.0
"""Seconds to wait for the dispatcher's histograms to count every webhook that arrived (an
attempt is observed after its log write, which follows the receipt)."""
ROUTE = "/v1/payments"
LAG_CUT_MS = 0.5
"""What ``svc_delivery_lag_seconds`` falls short on average: it is counted in whole
milliseconds (``int(time.time() * 1000)`` less the creation's)."""

WAIT = "svc_event_wait_seconds"
LAG = "svc_delivery_lag_seconds"
DURATION = "svc_delivery_duration_seconds"
REQUEST = "svc_http_request_duration_seconds"


async def scrape(system: ServiceSystem) -> dict[str, str]:
    """Every process's ``/metrics`` page, by its name."""
    pages = {}
    async with aiohttp.ClientSession() as session:
        for role, url in system.metrics_urls().items():
            async with session.get(url) as response:
                pages[role] = await response.text()
    return pages


def spread(values: list[float]) -> dict[str, float]:
    """p50, p99, max and mean of milliseconds, rounded to tenths (NaN when there are none)."""
    if not values:
        return {"p50_ms": math.nan, "p99_ms": math.nan, "max_ms": math.nan, "mean_ms": math.nan}
    return {
        "p50_ms": round(percentile(values, 50), 1),
        "p99_ms": round(percentile(values, 99), 1),
        "max_ms": round(max(values), 1),
        "mean_ms": round(sum(values) / len(values), 2),
    }


def histogram_row(histogram: Histogram) -> dict[str, float]:
    """Count, mean and interpolated p50/p99 of a histogram of seconds, in milliseconds."""
    return {
        "count": histogram.count,
        "p50_ms": round(histogram.quantile(0.5) * 1000, 1),
        "p99_ms": round(histogram.quantile(0.99) * 1000, 1),
        "mean_ms": round(histogram.mean * 1000, 2),
    }


@dataclass(frozen=True, slots=True)
class Answered:
    """One paced ``POST /v1/payments``: its status (0: transport error), the payment, and the
    client's wall clock when it was sent and when its answer was read."""

    status: int
    payment_id: str | None
    sent_s: float
    answered_s: float


async def paced_payments(api_url: str, key: str, rate: float, count: int) -> list[Answered]:
    """``count`` payments created at ``rate`` per second, each request sent on its schedule
    (open loop: a slow answer holds no later request back)."""
    answers: list[Answered] = []
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(api_url, connector=connector, timeout=timeout) as session:

        async def send(_seq: int) -> None:
            headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": uuid.uuid4().hex}
            sent = time.time()
            try:
                async with session.post(ROUTE, data=FORM, headers=headers) as answer:
                    body = await answer.read()
                    status = answer.status
            except (aiohttp.ClientError, TimeoutError):
                status, body = 0, b""
            answered = time.time()
            made = orjson.loads(body)["id"] if status == 201 else None
            answers.append(Answered(status, made, sent, answered))

        await paced(count, rate, send)
    return answers


def latencies(
    answers: list[Answered], events: dict[str, tuple[str, int]], arrived: dict[str, Receipt]
) -> dict[str, list[float]]:
    """Per payment whose webhook arrived, in milliseconds: 201 → receipt (the measure),
    event created → 201, event created → receipt, the request's round trip and the
    receiver's own time."""
    found: dict[str, list[float]] = {
        "webhook": [],
        "created_to_201": [],
        "created_to_receipt": [],
        "request": [],
        "receiver": [],
    }
    for answer in answers:
        event = events.get(answer.payment_id or "")
        receipt = arrived.get(event[0]) if event else None
        if event is None or receipt is None:
            continue
        answered_ms, created_ms = answer.answered_s * 1000, event[1]
        found["webhook"].append(receipt.at_ms - answered_ms)
        found["created_to_201"].append(answered_ms - created_ms)
        found["created_to_receipt"].append(receipt.at_ms - created_ms)
        found["request"].append((answer.answered_s - answer.sent_s) * 1000)
        found["receiver"].append(receipt.took_ms)
    return found


def breakdown(before: dict[str, str], after: dict[str, str]) -> dict[str, Any]:
    """The dispatcher's and the API's histograms over the paced run: the event's wait until a
    dispatcher took it, the whole lag to the delivery's outcome, the POST, and the API's
    request time; what lies between taking and the POST (intake, subscribers, signing) is
    the lag's mean less the two around it."""

    def diff(name: str, **labels: str) -> Histogram:
        return histogram_since(before, after, name, **labels)

    wait, lag, post = diff(WAIT), diff(LAG, trigger="initial"), diff(DURATION)
    # The lag counts whole milliseconds since creation, cut down (half of one short on
    # average); the wait counts from the same creation time, uncut.
    dispatch_ms = (lag.mean - wait.mean - post.mean) * 1000 + LAG_CUT_MS
    republished = counter_since(before, after, "svc_outbox_republished")
    failed = counter_since(before, after, "svc_event_publish_failures")
    return {
        "wait": histogram_row(wait),
        "dispatch": {"mean_ms": round(dispatch_ms, 2)},
        "post": histogram_row(post),
        "lag": histogram_row(lag),
        "api_request": histogram_row(diff(REQUEST, route=ROUTE)),
        "outbox_republished": republished,
        "publish_failures": failed,
    }


async def _settled(system: ServiceSystem, before: dict[str, str], delivered: int) -> dict[str, str]:
    """The processes' pages once the dispatcher's lag counts ``delivered`` more webhooks (or
    after ``SETTLE`` seconds)."""
    deadline = time.monotonic() + SETTLE
    while True:
        pages = await scrape(system)
        counted = breakdown(before, pages)["lag"]["count"]
        if counted >= delivered or time.monotonic() > deadline:
            return pages
        await asyncio.sleep(0.1)


async def _capacity(bench: Bench, system: ServiceSystem, smoke: bool) -> float:
    """Payments per second of the API at ``CAPACITY_CONCURRENCY`` in flight, after a warm-up;
    returns once every webhook of both arrived, so the paced run starts on an idle system."""
    key, org = await shop(system, bench, "wlatwarm")
    posted, _ = await post_payments(
        system.api_url, key, SMOKE_WARM_UP if smoke else WARM_UP, CAPACITY_CONCURRENCY
    )
    made = [p.payment_id for p in posted if p.payment_id]
    posted, wall = await post_payments(
        system.api_url, key, SMOKE_CAPACITY if smoke else CAPACITY, CAPACITY_CONCURRENCY
    )
    measured = [p.payment_id for p in posted if p.payment_id]
    _, arrived = await delivered(bench, system, "wlatwarm", org, made + measured)
    if len(arrived) < len(made) + len(measured) or not measured:
        raise RuntimeError("webhook latency: payments of the capacity run or their webhooks failed")
    return len(measured) / wall


async def measure(bench: Bench, system: ServiceSystem, smoke: bool) -> dict[str, Any]:
    """Capacity, then payments at half of it for ``SECONDS``; the latency and its breakdown."""
    capacity = await _capacity(bench, system, smoke)
    rate = capacity / 2
    seconds = SMOKE_SECONDS if smoke else SECONDS
    count = max(1, round(rate * seconds))
    key, org = await shop(system, bench, "wlat")
    await asyncio.sleep(0.5)  # the capacity run's last attempts observed before the first read
    before = await scrape(system)
    load = os.getloadavg()[0]
    log.info("webhook latency: capacity %.0f/s; %d payments at %.0f/s", capacity, count, rate)
    started = time.perf_counter()
    answers = await paced_payments(system.api_url, key, rate, count)
    wall = time.perf_counter() - started
    ids = [a.payment_id for a in answers if a.payment_id]
    events, arrived = await delivered(bench, system, "wlat", org, ids)
    after = await _settled(system, before, len(arrived))
    found = latencies(answers, events, arrived)
    statuses: dict[str, int] = {}
    for answer in answers:
        statuses[str(answer.status)] = statuses.get(str(answer.status), 0) + 1
    return {
        "label": system.label,
        "capacity_per_s": round(capacity, 1),
        "capacity_concurrency": CAPACITY_CONCURRENCY,
        "rate_per_s": round(rate, 1),
        "sent_per_s": round(len(answers) / wall, 1) if wall > 0 else None,
        "seconds": seconds,
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "requests": count,
        "statuses": statuses,
        "created": len(ids),
        "delivered": len(found["webhook"]),
        "missing": len(ids) - len(found["webhook"]),
        "before_201": sum(1 for ms in found["webhook"] if ms < 0),
        **spread(found["webhook"]),
        "stages": {
            **{name: spread(values) for name, values in found.items() if name != "webhook"},
            **breakdown(before, after),
        },
    }


async def run(run: Run) -> dict[str, Any]:
    system = ServiceSystem(run.procs, run.stores, 1, "wlat", api=True)
    try:
        await system.open()
        await system.start()
        return await measure(run.bench, system, run.smoke)
    finally:
        await system.close()


def targets(result: dict[str, Any] | None) -> list[Goal]:
    result = result or {}
    return [
        Goal(
            "payment to webhook p99 (201 to receipt, at half the API's capacity), ms",
            result.get("p99_ms"),
            f"≤ {TARGET_P99_MS:g}",
            lambda v: v <= TARGET_P99_MS,
        ),
        Goal(
            "payment to webhook: webhooks missing",
            result.get("missing"),
            "0",
            lambda v: v == 0,
        ),
    ]


def _ms(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:,.{digits}f}"


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    stages = result["stages"]
    # The three stages make up the lag, counted to the fraction of a millisecond.
    lag_ms = sum(stages[stage]["mean_ms"] for stage in ("wait", "dispatch", "post"))

    def share(mean_ms: float) -> str:
        if not lag_ms or math.isnan(lag_ms) or math.isnan(mean_ms):
            return "–"
        return f"{mean_ms / lag_ms:.0%}"

    def row(stage: str, source: str, found: dict[str, Any], of_lag: bool = False) -> str:
        return (
            f"| {stage} | {source} | {_ms(found.get('p50_ms'))} | {_ms(found.get('p99_ms'))} | "
            f"{_ms(found.get('mean_ms'), 2)} | {share(found['mean_ms']) if of_lag else ''} |"
        )

    return [
        "",
        f"**Payment to webhook**: `POST /v1/payments` paced at {_ms(result['rate_per_s'], 0)}/s "
        f"for {_ms(result['seconds'], 0)} s, half of the {_ms(result['capacity_per_s'], 0)}/s "
        f"one `svc api` process answered at {result['capacity_concurrency']} in flight just "
        "before, with a scheduler and one dispatcher delivering each `payment.created` to one "
        "endpoint at the nginx receiver. Latency from the 201 (the client's clock when it "
        "had read the answer) to the receiver's log time of the webhook (nginx `$msec`, "
        "to the millisecond), one machine's wall clock; negative when the webhook came "
        f"first ({result['before_201']:,} of {result['delivered']:,} did). The machine's "
        f"load (1-minute average) was {_ms(result.get('load_before'), 2)} before the paced "
        f"run and {_ms(result.get('load_after'), 2)} after it.",
        "",
        "| payments | sent/s | p50 ms | p99 ms | max ms | webhooks delivered | missing |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {result['created']:,} | {_ms(result['sent_per_s'], 0)} | {_ms(result['p50_ms'])} | "
        f"{_ms(result['p99_ms'])} | {_ms(result['max_ms'])} | {result['delivered']:,} | "
        f"{result['missing']:,} |",
        "",
        "Where the time goes, along the event (created on the API's clock before its "
        "`INSERT`); the dispatcher's histograms over the paced run, their percentiles "
        "interpolated within buckets (the POST's first is 0-5 ms, so its p50 says little); "
        "share: of the mean from creation to the delivery's "
        f"outcome. The outbox sweep re-published {_ms(stages['outbox_republished'], 0)} "
        f"events; {_ms(stages['publish_failures'], 0)} publishes failed.",
        "",
        "| stage | measured by | p50 ms | p99 ms | mean ms | share |",
        "|---|---|---:|---:|---:|---:|",
        row("API request, in → answered", f"API `{REQUEST}`", stages["api_request"]),
        row("POST /v1/payments sent → 201 read", "client clock", stages["request"]),
        row(
            "event created → 201 read by the client (store, commit, publish and its confirm, "
            "answer)",
            "client clock − `created_at`",
            stages["created_to_201"],
        ),
        row(
            "event created → taken from the fan-out queue (store, commit, publish, queue wait)",
            f"`{WAIT}`",
            stages["wait"],
            True,
        ),
        row(
            "taken → POST sent (intake, subscribers, signing)",
            "lag − wait − POST, means (the lag's whole ms: ± 0.5)",
            stages["dispatch"],
            True,
        ),
        row("POST → answer read", f"`{DURATION}`", stages["post"], True),
        row("of which the receiver", "nginx `$request_time`", stages["receiver"]),
        row("event created → delivery's outcome", f"`{LAG}`", stages["lag"]),
        row(
            "event created → webhook received",
            "receiver log − `created_at`",
            stages["created_to_receipt"],
        ),
        row("**201 → webhook received**", "receiver log − client clock", result),
    ]
