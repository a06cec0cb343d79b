"""The simulation terminal: a client of the terminal protocol that plays magic amounts.

The last two digits of the amount (the Rappen) choose what the customer and the card do:

====  =====================================================================================
 01   declined: waiting for card, (tip), PIN entry, processing → ``failed`` (card_declined)
 02   the customer cancels on the terminal: waiting for card → ``canceled`` (customer_canceled)
 03   no answer: waiting for card, then silence until ``SVC_TERMINAL_TIMEOUT`` → ``failed``
      (terminal_timeout, decided by the service)
 04   authorized, then the capture fails → ``authorized`` → ``failed`` (capture_failed)
 any  approved: waiting for card, (tip), PIN entry, processing → ``authorized`` → ``succeeded``
====  =====================================================================================

With ``tip_prompt`` the customer chooses a tip of 10 % rounded to 5 Rappen (the
``tip_selection`` step); it arrives with ``authorized``. Each step takes
``SVC_TERMINAL_STEP_DELAY``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import aiohttp
import orjson

from svc.terminal import protocol

log = logging.getLogger(__name__)

MAGIC: dict[int, str] = {1: "decline", 2: "customer_cancels", 3: "no_answer", 4: "capture_fails"}


def outcome_of(amount: int) -> str:
    """What the simulation does for ``amount``: ``approve`` or one of ``MAGIC``."""
    return MAGIC.get(amount % 100, "approve")


def tip_for(amount: int) -> int:
    """10 % of the amount, rounded to 5 Rappen (the smallest coin)."""
    return round(amount / 10 / 5) * 5


def plan(payment_id: str, amount: int, tip_prompt: bool) -> list[dict[str, Any]]:
    """The messages the simulation sends for a payment, one per step."""
    outcome = outcome_of(amount)

    def step(name: str) -> dict[str, Any]:
        return {"type": "progress", "payment_id": payment_id, "step": name}

    messages = [step("waiting_for_card")]
    if outcome == "customer_cancels":
        return [
            *messages,
            {"type": "canceled", "payment_id": payment_id, "reason": "customer_canceled"},
        ]
    if outcome == "no_answer":
        return messages
    if tip_prompt:
        messages.append(step("tip_selection"))
    messages += [step("pin_entry"), step("processing")]
    if outcome == "decline":
        return [*messages, {"type": "failed", "payment_id": payment_id, "reason": "card_declined"}]
    tip = tip_for(amount) if tip_prompt else 0
    messages.append({"type": "authorized", "payment_id": payment_id, "tip": tip})
    if outcome == "capture_fails":
        return [*messages, {"type": "failed", "payment_id": payment_id, "reason": "capture_failed"}]
    return [*messages, {"type": "succeeded", "payment_id": payment_id}]


class SimulatedTerminal:
    """One simulation terminal connected to ``url`` with its device ``secret``."""

    def __init__(
        self, session: aiohttp.ClientSession, url: str, secret: str, step_delay: float
    ) -> None:
        self._session = session
        self._url = url
        self._secret = secret
        self._step_delay = step_delay

    async def run(self) -> None:
        """Stay connected and play every payment the service starts; returns when closed."""
        headers = {"Authorization": f"Bearer {self._secret}"}
        playing: dict[str, asyncio.Task[None]] = {}
        async with self._session.ws_connect(self._url, headers=headers, heartbeat=20) as ws:
            try:
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        continue
                    self._handle(ws, orjson.loads(message.data), playing)
            finally:
                tasks = list(playing.values())  # done callbacks shrink ``playing``
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    def _handle(
        self,
        ws: aiohttp.ClientWebSocketResponse,
        data: dict[str, Any],
        playing: dict[str, asyncio.Task[None]],
    ) -> None:
        kind, payment_id = data.get("type"), str(data.get("payment_id", ""))
        if kind == "payment.start" and payment_id not in playing:
            steps = plan(payment_id, int(data["amount"]), bool(data["tip_prompt"]))
            task = asyncio.create_task(self._play(ws, steps))
            playing[payment_id] = task
            task.add_done_callback(lambda _t: playing.pop(payment_id, None))
        elif kind == "payment.cancel" and payment_id in playing:
            playing[payment_id].cancel()
        elif kind == "error":
            log.warning("service refused a simulator message: %r", data.get("detail"))

    async def _play(self, ws: aiohttp.ClientWebSocketResponse, steps: list[dict[str, Any]]) -> None:
        for message in steps:
            await asyncio.sleep(self._step_delay)
            await ws.send_str(protocol.encode(message))
