"""The client processes of the long-poll section, each holding long polls or payment streams.

``Clients`` spawns them and drives each over a pipe: ``open`` (one wait or stream per payment
id), ``answered`` (final answers and refusals so far), ``finish`` (drop what is open, return
the ``Tally``), ``exit``. Times are ``time.monotonic()``, one clock for every process.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import time
from collections import Counter
from collections.abc import Sequence
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
    """What one client process saw: when each final answer arrived, and what went wrong."""

    answered: dict[str, float] = field(default_factory=dict)
    refused: Counter[str] = field(default_factory=Counter)
    """Non-2xx answers, transport errors and failed stream opens, by reason."""
    expired: int = 0
    """Waits that ran out (200 with an open payment) and were sent again, as a client does."""


async def _wait(session: aiohttp.ClientSession, url: str, tally: Tally, payment_id: str) -> None:
    while True:
        try:
            async with session.get(f"{url}?wait={WAIT}") as answer:
                body, status = await answer.read(), answer.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            tally.refused[type(exc).__name__] += 1
            return
        if status != 200:
            tally.refused[str(status)] += 1
            return
        if orjson.loads(body)["status"] in FINAL:
            tally.answered[payment_id] = time.monotonic()
            return
        tally.expired += 1


async def _stream(session: aiohttp.ClientSession, url: str, tally: Tally, payment_id: str) -> None:
    """A stream counts as open when its first message (the payment as it is) arrived."""
    try:
        async with session.ws_connect(f"{url}/stream") as ws:
            opened = False
            async for message in ws:
                data = orjson.loads(message.data) if message.type == aiohttp.WSMsgType.TEXT else {}
                if data.get("type") != "payment":
                    continue
                opened = True
                if data["payment"]["status"] in FINAL:
                    tally.answered[payment_id] = time.monotonic()
                    return
            if not opened:
                tally.refused[f"closed {ws.close_code}"] += 1
    except (aiohttp.ClientError, TimeoutError) as exc:
        tally.refused[type(exc).__name__] += 1


async def serve(conn: Connection) -> None:
    """Follow the harness's commands on ``conn`` until ``exit``."""
    connector = aiohttp.TCPConnector(limit=0)  # one connection per wait, no cap
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=WAIT + 30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        tally, tasks = Tally(), []
        while True:
            command, argument = await asyncio.to_thread(conn.recv)
            if command == "open":
                base_url, key, kind, ids = argument
                hold = _wait if kind == "waits" else _stream
                session.headers["Authorization"] = f"Bearer {key}"
                tasks += [
                    asyncio.create_task(hold(session, f"{base_url}/v1/payments/{p}", tally, p))
                    for p in ids
                ]
                conn.send(len(tasks))
            elif command == "answered":
                conn.send((len(tally.answered), tally.refused.total()))
            elif command == "finish":
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                conn.send(tally)
                tally, tasks = Tally(), []
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


class Clients:
    """The client processes, driven from the harness."""

    def __init__(self, count: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipes: list[Connection] = []
        self.processes = []
        for _ in range(count):
            ours, theirs = context.Pipe()
            process = context.Process(target=main, args=(theirs,), daemon=True)
            process.start()
            theirs.close()
            self._pipes.append(ours)
            self.processes.append(process)

    async def ask_all(self, command: str, arguments: Sequence[Any] | None = None) -> list[Any]:
        """Send ``command`` to every client (with its own argument) and gather the answers."""

        async def ask(pipe: Connection, argument: Any) -> Any:
            await asyncio.to_thread(pipe.send, (command, argument))
            return await asyncio.to_thread(pipe.recv)

        found = arguments if arguments is not None else [None] * len(self._pipes)
        return list(await asyncio.gather(*map(ask, self._pipes, found)))

    async def close(self) -> None:
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.send(("exit", None))
        for process in self.processes:
            await asyncio.to_thread(process.join, 10)
            if process.is_alive():
                process.kill()
