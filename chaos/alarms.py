"""A RabbitMQ memory alarm as a fault: raised on the broker node, lifted after the fault's down
time, and what the service showed meanwhile.

While the alarm lasts RabbitMQ blocks every connection that publishes. The service must go on
taking payments (their events wait in the outbox), stay ready and say that it is blocked; once
the alarm is lifted it must say so no more, and every event must arrive (the suite's verdict
checks that). The api's ``/ready`` and every role's ``svc_amqp_blocked`` are read every half
second, and the api's own histogram of request times tells how many payment creations during
the alarm took longer than ``ANSWER_WITHIN``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from harness.processes import ROLES, Pods

if TYPE_CHECKING:
    from chaos.faults import World

log = logging.getLogger(__name__)

ANSWER_WITHIN = 1.0
"""Seconds within which 99 % of payment creations must be answered during the alarm."""
EVERY = 0.5
"""Seconds between two looks at the roles."""
UNBLOCKED_WITHIN = 10.0
"""Seconds after the alarm is lifted within which the api must no longer report the block."""
PAYMENTS = "/v1/payments"
BUCKET = "1.0"
"""The api's histogram bucket of ``ANSWER_WITHIN`` (``svc.metrics``)."""


async def _json(session: aiohttp.ClientSession, url: str) -> tuple[str, dict[str, Any]]:
    try:
        async with session.get(url) as answer:
            return str(answer.status), await answer.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return "unanswered", {}


async def _metrics(session: aiohttp.ClientSession, url: str) -> dict[tuple[str, str], float]:
    """``svc_amqp_blocked``, the payment route's request-time buckets and its POST answers
    by status at ``url``/metrics, keyed by (kind, bucket or status); empty when the role does
    not answer."""
    try:
        async with session.get(f"{url}/metrics") as answer:
            text = await answer.text()
    except (aiohttp.ClientError, TimeoutError):
        return {}
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "svc_amqp_blocked":
                found["blocked", ""] = sample.value
            elif sample.labels.get("route") != PAYMENTS:
                continue
            elif sample.name == "svc_http_request_duration_seconds_bucket":
                found["bucket", sample.labels["le"]] = sample.value
            elif sample.name == "svc_http_requests_total" and sample.labels["method"] == "POST":
                found["status", sample.labels["status"]] = sample.value
    return found


class MemoryAlarm:
    """``raise_alarm`` sets the broker node's memory high watermark to 1 byte; ``lift`` sets it
    back to RabbitMQ's default (40 % of the memory) and records what was seen in between in
    ``World.notes`` and ``World.checks``."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._stop = asyncio.Event()
        self._watching: asyncio.Task[None] | None = None
        self._started = 0.0
        self._command_s = 0.0
        self._lasted = 0.0
        self._ready: Counter[str] = Counter()
        self._blocked_after: float | None = None
        self._gauges: dict[str, float] = {}
        self._first: dict[tuple[str, str], float] = {}
        self._last: dict[tuple[str, str], float] = {}

    async def raise_alarm(self, world: World) -> None:
        self._reset()
        asked = time.monotonic()
        await world.rabbitmq.ctl("set_vm_memory_high_watermark", "absolute", "1")
        self._started = time.monotonic()
        self._command_s = round(self._started - asked, 2)
        log.info("RabbitMQ memory alarm raised (rabbitmqctl took %.1f s)", self._command_s)
        self._first = await self._payments(world.pods)
        self._watching = asyncio.create_task(self._watch(world.pods))

    async def lift(self, world: World) -> None:
        self._stop.set()
        if self._watching is not None:
            with contextlib.suppress(Exception):
                await self._watching
        self._last = await self._payments(world.pods)
        self._lasted = round(time.monotonic() - self._started, 2)
        await world.rabbitmq.ctl("set_vm_memory_high_watermark", "0.4")
        log.info("RabbitMQ memory alarm lifted")
        unblocked = await self._unblocked(world.pods)
        self._record(world, unblocked)

    async def _payments(self, pods: Pods) -> dict[tuple[str, str], float]:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            return await _metrics(session, pods["api"].ops_url)

    async def _watch(self, pods: Pods) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while not self._stop.is_set():
                status, body = await _json(session, f"{pods['api'].ops_url}/ready")
                self._ready[status] += 1
                warnings = body.get("warnings") or {}
                if warnings.get("rabbitmq_blocked") and self._blocked_after is None:
                    self._blocked_after = round(time.monotonic() - self._started, 2)
                for role in ROLES:
                    value = (await _metrics(session, pods[role].ops_url)).get(("blocked", ""))
                    if value is not None:
                        self._gauges[role] = max(self._gauges.get(role, 0.0), value)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), EVERY)

    async def _unblocked(self, pods: Pods) -> float | None:
        """Seconds after the lift until the api reported no block, in ``/ready`` and
        ``svc_amqp_blocked``; None when it still did after ``UNBLOCKED_WITHIN``."""
        lifted = time.monotonic()
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while time.monotonic() - lifted < UNBLOCKED_WITHIN:
                status, body = await _json(session, f"{pods['api'].ops_url}/ready")
                gauge = (await _metrics(session, pods["api"].ops_url)).get(("blocked", ""))
                if status == "200" and body.get("warnings") == {"rabbitmq_blocked": False}:
                    if gauge == 0.0:
                        return round(time.monotonic() - lifted, 2)
                await asyncio.sleep(0.2)
        return None

    def _record(self, world: World, unblocked: float | None) -> None:
        def count(le: str, at: dict[tuple[str, str], float]) -> float:
            return at.get(("bucket", le), 0.0)

        made = count("+Inf", self._last) - count("+Inf", self._first)
        quick = count(BUCKET, self._last) - count(BUCKET, self._first)
        slow = int(made - quick)
        errors = {
            status: int(value - self._first.get((kind, status), 0.0))
            for (kind, status), value in self._last.items()
            if kind == "status" and status.startswith("5")
        }
        errors = {status: n for status, n in errors.items() if n}
        world.notes["flow_control"] = {
            "raise_command_s": self._command_s,
            "alarm_s": self._lasted,
            "api_ready_answers": dict(self._ready),
            "api_reported_blocked_after_s": self._blocked_after,
            "svc_amqp_blocked_max": dict(self._gauges),
            "unblocked_after_s": unblocked,
            "payment_requests_during_alarm": int(made),
            f"payment_requests_over_{ANSWER_WITHIN:g}s": slow,
            "payment_answers_5xx": errors,
        }
        world.checks["api_ready_while_blocked"] = set(self._ready) == {"200"}
        world.checks["api_reported_blocked"] = (
            self._blocked_after is not None and self._gauges.get("api") == 1.0
        )
        world.checks[f"payments_p99_within_{ANSWER_WITHIN:g}s"] = made > 0 and slow <= made / 100
        world.checks["payments_never_5xx"] = not errors
        world.checks["unblocked_after_alarm"] = unblocked is not None
