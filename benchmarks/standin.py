"""A receiver standing in for nginx where it is not installed: same answers, same log lines.

Usage: ``python -m benchmarks.standin PORT PREFIX [DELAY]`` (logs to ``PREFIX/access.log``);
with ``DELAY`` every answer comes that many seconds after the request (the slow endpoints).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import IO

from aiohttp import web

from benchmarks.receipts import format_line

SINK = web.AppKey("sink", IO[str])
PREFIX = web.AppKey("prefix", Path)
DELAY = web.AppKey("delay", float)


async def answer(request: web.Request) -> web.Response:
    started = time.monotonic()
    body = await request.read()
    if request.app[DELAY]:
        await asyncio.sleep(request.app[DELAY])
    failing = request.path.startswith("/storm/") and (request.app[PREFIX] / "failing").exists()
    status = 503 if failing else 204
    request.app[SINK].write(
        format_line(
            time.time(),
            status,
            len(body),
            request.path,
            request.headers.get("Svc-Event-Id", ""),
            request.headers.get("Svc-Signature", ""),
            time.monotonic() - started,
        )
    )
    return web.Response(status=status)


async def serve(port: int, prefix: Path, delay: float = 0.0) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    with (prefix / "access.log").open("a", buffering=1) as sink:
        app = web.Application()
        app[SINK] = sink
        app[PREFIX] = prefix
        app[DELAY] = delay
        app.router.add_route("*", "/{tail:.*}", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=4096).start()
        await stop.wait()
        await runner.cleanup()


if __name__ == "__main__":
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    asyncio.run(serve(int(sys.argv[1]), Path(sys.argv[2]), delay))
