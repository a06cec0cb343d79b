"""The client side of the long-poll benchmark: one process holding long polls or payment streams.

The harness starts one or more of these (``multiprocessing``, spawn) and drives each over a
pipe: ``("open", (base_url, key, kind, ids))`` opens one wait or stream per payment id,
``("answered", None)`` asks how many final answers, stream openings and refusals so far,
``("finish", None)`` drops what is still open and returns the ``Tally`` (the CPU time is the
process's total so far), ``("exit", None)`` ends the process. Times are ``time.monotonic()``,
one clock for every process of the machine, so the harness can subtract its commit times.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import aiohttp
import orjson

from svc.payments.model import FINAL

WAIT = 30
"""Seconds of ``GET /v1/payments/{id}?wait=``: the most the API allows."""
KINDS = ("waits", "streams")


@dataclass
class Tally:
    """What one client process saw: when each final answer arrived, and what went wrong."""

    answered: dict[str, float] = field(default_factory=dict)
    opened: int = 0
    """Streams whose first message (the payment as it is) arrived; waits are not told."""
    refused: int = 0
    """Non-2xx answers, transport errors and failed stream opens."""
    reasons: dict[str, int] = field(default_factory=dict)
    expired: int = 0
    """Waits that ran out (200 with an open payment) and were sent again, as a client does."""
    cpu_s: float = 0.0

    def refuse(self, reason: str) -> None:
        self.refused += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1


class Holder:
    """Holds waits or streams on one session, recording each payment's final answer."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, key: str, kind: str) -> None:
        assert kind in KINDS
        self.session = session
        self.base_url = base_url
        self.headers = {"Authorization": f"Bearer {key}"}
        self.kind = kind
        self.tally = Tally()

    async def hold(self, payment_id: str) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            if self.kind == "waits":
                await self._wait(payment_id)
            else:
                await self._stream(payment_id)

    async def _wait(self, payment_id: str) -> None:
        url = f"{self.base_url}/v1/payments/{payment_id}?wait={WAIT}"
        while True:
            try:
                async with self.session.get(url, headers=self.headers) as answer:
                    body = await answer.read()
                    status = answer.status
            except (aiohttp.ClientError, TimeoutError) as exc:
                self.tally.refuse(type(exc).__name__)
                return
            if status != 200:
                self.tally.refuse(str(status))
                return
            if orjson.loads(body)["status"] in FINAL:
                self.tally.answered[payment_id] = time.monotonic()
                return
            self.tally.expired += 1

    async def _stream(self, payment_id: str) -> None:
        url = f"{self.base_url}/v1/payments/{payment_id}/stream"
        try:
            async with self.session.ws_connect(url, headers=self.headers) as ws:
                first = True
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        continue
                    data = orjson.loads(message.data)
                    if data["type"] != "payment":
                        continue
                    if first:
                        self.tally.opened += 1
                        first = False
                    if data["payment"]["status"] in FINAL:
                        self.tally.answered[payment_id] = time.monotonic()
                        return
                if first:
                    self.tally.refuse(f"closed {ws.close_code}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.tally.refuse(type(exc).__name__)


async def serve(conn: Connection) -> None:
    """Follow the harness's commands on ``conn`` until ``exit``."""
    connector = aiohttp.TCPConnector(limit=0)  # one connection per wait, no cap
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=WAIT + 30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        holder: Holder | None = None
        tasks: list[asyncio.Task[None]] = []
        while True:
            command, argument = await asyncio.to_thread(conn.recv)
            if command == "open":
                base_url, key, kind, ids = argument
                if holder is None:
                    holder = Holder(session, base_url, key, kind)
                tasks += [asyncio.create_task(holder.hold(p)) for p in ids]
                conn.send(len(tasks))
            elif command == "answered":
                tally = holder.tally if holder is not None else Tally()
                conn.send((len(tally.answered), tally.opened, tally.refused))
            elif command == "finish":
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks)
                tally = holder.tally if holder is not None else Tally()
                usage = resource.getrusage(resource.RUSAGE_SELF)
                tally.cpu_s = usage.ru_utime + usage.ru_stime
                conn.send(tally)
                holder, tasks = None, []
            else:
                return


def main(conn: Connection) -> None:
    """A client process's entry point (uvloop, as the service)."""
    run: Any = asyncio.run
    with contextlib.suppress(ImportError):
        import uvloop

        run = uvloop.run
    try:
        run(serve(conn))
    finally:
        conn.close()
