"""SIGTERM to a real dispatcher process mid-burst: it exits 0 in its grace and loses no job."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from aiohttp import web

from dispatcher.gate import INITIAL_WINDOW
from harness.ports import free_port, wait_ready
from harness.processes import environment
from harness.receivers import serve_locally
from svc.context import Context
from svc.events.flow import emit
from svc.settings import Settings
from tests.conftest import Running

BURST = 300
EVENT_TYPE = "payment.succeeded"


class SlowReceiver:
    """A webhook receiver that answers 204 after ``delay`` seconds and counts event ids."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.seen: collections.Counter[str] = collections.Counter()
        self.open = 0
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._changed = asyncio.Condition()

    async def __aenter__(self) -> SlowReceiver:
        app = web.Application()
        app.router.add_post("/hook", self._handle)
        self._runner, self.port = await serve_locally(app)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def _handle(self, request: web.Request) -> web.Response:
        await request.read()
        # Counted on arrival: a delivery cut off by the shutdown still reached the receiver,
        # and its redelivery is the duplicate at-least-once allows.
        self.seen[request.headers["Svc-Event-Id"]] += 1
        self.open += 1
        await self._notify()
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.open -= 1
            await self._notify()
        return web.Response(status=204)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def until(self, predicate: Callable[[], bool], timeout: float) -> None:
        """Wait until ``predicate()`` holds; raises TimeoutError otherwise."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(predicate)

    async def wait_for(self, ids: set[str], timeout: float) -> None:
        await self.until(lambda: ids <= self.seen.keys(), timeout)


class Dispatcher:
    """``svc dispatcher`` as a child process with its own ops port and log file."""

    def __init__(self, settings: Settings, log: Path, concurrency: int) -> None:
        self.port = free_port()
        self.log = log
        self.env = environment(
            settings,
            http_port=free_port(),
            ops_port=self.port,
            dispatcher_concurrency=concurrency,
        )
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "cli",
                "dispatcher",
                env=self.env,
                stdout=out,
                stderr=out,
            )
        await wait_ready(f"http://127.0.0.1:{self.port}/ready")

    async def terminate(self, within: float) -> int:
        """SIGTERM, then the exit code, which must come within ``within`` seconds."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(within):
            return await self.process.wait()

    async def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


async def subscribed_scope(ctx: Context, url: str) -> tuple[str, str]:
    _, scope = await ctx.api_keys.create("test", "shutdown")
    await ctx.endpoints.create(ctx.db, scope, url, [EVENT_TYPE])
    return scope.org, scope.env


async def publish_burst(ctx: Context, org: str, env: str) -> set[str]:
    ids: set[str] = set()
    for start in range(0, BURST, 50):
        batch = await asyncio.gather(
            *(
                emit(ctx, org, env, EVENT_TYPE, {"id": f"pay_{n}", "amount": n})
                for n in range(start, start + 50)
            )
        )
        ids.update(event.id for event in batch)
    return ids


async def test_sigterm_mid_burst_exits_zero_and_loses_nothing(
    settings: Settings, ctx: Context, tmp_path: Path
) -> None:
    scheduler = Running(settings)
    await scheduler.start(roles=("scheduler",))
    first = Dispatcher(settings, tmp_path / "first.log", concurrency=20)
    second = Dispatcher(settings, tmp_path / "second.log", concurrency=200)
    try:
        async with SlowReceiver(delay=0.2) as receiver:
            org, env = await subscribed_scope(ctx, receiver.url)
            await first.start()
            ids = await publish_burst(ctx, org, env)
            # 20 at a time, 0.2 s each: the burst takes ~3 s, so this lands mid-burst.
            await receiver.until(lambda: len(receiver.seen) >= 40 and receiver.open > 0, 15)
            code = await first.terminate(within=settings.shutdown_grace + 3)
            assert code == 0, first.output()
            assert len(receiver.seen) < BURST, "the burst ended before SIGTERM"
            assert "draining" in first.output()

            await second.start()
            await receiver.wait_for(ids, timeout=30)
            assert await second.terminate(within=settings.shutdown_grace + 3) == 0
    finally:
        await first.kill()
        await second.kill()
        await scheduler.close()


async def test_deliveries_past_the_grace_are_handed_back(
    settings: Settings, ctx: Context, tmp_path: Path
) -> None:
    scheduler = Running(settings)
    await scheduler.start(roles=("scheduler",))
    first = Dispatcher(settings, tmp_path / "first.log", concurrency=20)
    first.env["SVC_SHUTDOWN_GRACE"] = "500ms"
    second = Dispatcher(settings, tmp_path / "second.log", concurrency=200)
    try:
        # No answer comes within the delivery timeout (2 s), so nothing the first dispatcher
        # sends can succeed: whatever it had in flight when it stopped (cut off after its
        # grace, handed off, or timed out) must be sent again by the second one.
        async with SlowReceiver(delay=settings.delivery_timeout + 1) as receiver:
            org, env = await subscribed_scope(ctx, receiver.url)
            await first.start()
            ids: set[str] = set()
            for n in range(40):
                event = await emit(ctx, org, env, EVENT_TYPE, {"id": f"pay_{n}"})
                ids.add(event.id)
            # An endpoint that has not answered yet gets INITIAL_WINDOW requests at once, here
            # as many as the first dispatcher's 20 prefetch slots allow.
            await receiver.until(lambda: receiver.open >= min(INITIAL_WINDOW, 20), 15)
            code = await first.terminate(within=0.5 + 3)
            assert code == 0, first.output()

            receiver.seen.clear()  # from here on, only what the second dispatcher sends
            receiver.delay = 0.01
            await second.start()
            await receiver.wait_for(ids, timeout=30)
            assert await second.terminate(within=settings.shutdown_grace + 3) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            await first.kill()
        await second.kill()
        await scheduler.close()
