"""The client processes of the long-poll section: each holds one wait or one stream per payment
it is given and notes when the final payment arrived; the harness drives them over a pipe.
Several processes, so that one event loop does not pace the opening of every connection."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import aiohttp
import orjson

from svc.payments.model import FINAL

WAIT = 30
"""Seconds of ``GET /v1/payments/{id}?wait=``: the most the API allows."""


@dataclass
class Tally:
    """What one client process saw: when each final answer arrived (``time.monotonic()``, one
    clock for every process), and what went wrong."""

    answered: dict[str, float] = field(default_factory=dict)
    refused: int = 0
    """Non-2xx answers, transport errors, streams that ended without the final payment."""
    expired: int = 0
    """Waits that ran out (200 with an open payment) and were sent again, as a client does."""


async def _hold(
    session: aiohttp.ClientSession, payments: str, kind: str, tally: Tally, payment_id: str
) -> None:
    """Wait (again whenever a wait runs out) or stream until the payment is final."""
    url = f"{payments}/{payment_id}"
    try:
        while kind == "waits":
            async with session.get(f"{url}?wait={WAIT}") as answer:
                answer.raise_for_status()
                final = orjson.loads(await answer.read())["status"] in FINAL
            if final:
                tally.answered[payment_id] = time.monotonic()
                return
            tally.expired += 1
        async with session.ws_connect(f"{url}/stream") as ws:
            async for message in ws:
                data = orjson.loads(message.data) if message.type == aiohttp.WSMsgType.TEXT else {}
                if data.get("type") == "payment" and data["payment"]["status"] in FINAL:
                    tally.answered[payment_id] = time.monotonic()
                    return
        tally.refused += 1
    except (aiohttp.ClientError, TimeoutError):
        tally.refused += 1


async def _serve(conn: Connection, payments: str, key: str, kind: str) -> None:
    """Follow the harness's commands on ``conn``: ``open`` (one hold per payment id),
    ``answered`` (final answers and refusals so far), ``finish`` (drop what is open, send the
    tally and end)."""
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=WAIT + 30)
    tally, tasks = Tally(), []
    async with aiohttp.ClientSession(
        headers={"Authorization": f"Bearer {key}"},
        connector=aiohttp.TCPConnector(limit=0),  # one connection per wait, no cap
        timeout=timeout,
    ) as session:
        while True:
            command, ids = await asyncio.to_thread(conn.recv)
            if command == "open":
                tasks += [
                    asyncio.create_task(_hold(session, payments, kind, tally, p)) for p in ids
                ]
                conn.send(None)
            elif command == "answered":
                conn.send((len(tally.answered), tally.refused))
            else:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                conn.send(tally)
                return


def _client(*args: Any) -> None:
    """A client process's entry point (uvloop, as the service, when installed)."""
    run: Any = asyncio.run
    with contextlib.suppress(ImportError):
        import uvloop

        run = uvloop.run
    run(_serve(*args))


Ask = Callable[[str, Sequence[Any] | None], Awaitable[list[Any]]]


@contextlib.asynccontextmanager
async def clients(count: int, api_url: str, key: str, kind: str) -> AsyncIterator[Ask]:
    """``count`` client processes of ``kind``; yields ``ask(command, arguments)``, which sends
    each client its argument (or None) and gathers their answers."""
    context = multiprocessing.get_context("spawn")
    pipes = [context.Pipe() for _ in range(count)]
    args = (f"{api_url}/v1/payments", key, kind)
    processes = [
        context.Process(target=_client, args=(end, *args), daemon=True) for _, end in pipes
    ]
    for process in processes:
        process.start()

    async def ask(command: str, arguments: Sequence[Any] | None) -> list[Any]:
        for (pipe, _), argument in zip(pipes, arguments or [None] * count, strict=True):
            pipe.send((command, argument))
        return [await asyncio.to_thread(pipe.recv) for pipe, _ in pipes]

    try:
        await ask("answered", None)  # every client started, before anything is timed
        yield ask
    finally:
        for process in processes:
            await asyncio.to_thread(process.join, 10)
            process.kill()
