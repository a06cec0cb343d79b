"""Runs the sandbox's simulation terminals as protocol clients of the device WebSocket, and
starts a test organisation's one when either front door first lists its terminals.

Every API process hosts simulators; a Redis lease per simulation terminal makes exactly one
process run each, and another adopts it when that process dies. The simulator connects to
``SVC_TERMINAL_CONNECT_URL`` (default: this process's own port) like a real terminal would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from api.hub import HUB, Hub
from api.sandbox.terminal import SimulatedTerminal
from svc.context import Context
from svc.http import CONTEXT
from svc.orgs import Scope
from svc.pubsub.wakeups import SIMULATORS, presence_topic
from svc.terminal import flow
from svc.terminal.protocol import DEVICE_PATH

log = logging.getLogger(__name__)

RECONNECT_DELAY = 1.0
WILDCARD_HOSTS = ("", "0.0.0.0", "::")
SIMULATOR_START_WAIT = 3.0
"""How long the first listing waits for a new simulation terminal to come online."""


async def ensure_simulator(ctx: Context, hub: Hub, scope: Scope) -> None:
    """Give a test-environment organisation its simulation terminal; a new one is awaited
    online for a moment, so that the listing that made it shows it ready."""
    terminal_id = await flow.ensure_simulator(ctx, scope)
    if terminal_id is None:
        return
    # Listening before the status is read: a change after the read still wakes the wait.
    with hub.listen(presence_topic(terminal_id)) as listener:
        terminal = await ctx.terminals.get(terminal_id)
        try:
            async with asyncio.timeout(SIMULATOR_START_WAIT):
                while terminal is not None and not terminal.online:
                    await listener.get()
                    terminal = await ctx.terminals.get(terminal_id)
        except TimeoutError:
            pass  # listed as offline; it comes online when a simulator host adopts it


def connect_url(ctx: Context) -> str:
    """Where simulators connect: the setting, else this process's own listening port."""
    if ctx.settings.terminal_connect_url:
        return ctx.settings.terminal_connect_url
    host = ctx.settings.http_host
    host = "127.0.0.1" if host in WILDCARD_HOSTS else host
    return f"ws://{host}:{ctx.settings.http_port}{DEVICE_PATH}"


class SimulatorHost:
    """Adopts simulation terminals whose lease it can take and keeps them connected."""

    def __init__(self, ctx: Context, hub: Hub) -> None:
        self._ctx = ctx
        self._hub = hub
        self._owner = uuid.uuid4().hex
        self._running: dict[str, asyncio.Task[None]] = {}

    async def run(self) -> None:
        lease = self._ctx.settings.simulator_lease
        async with aiohttp.ClientSession() as session:
            with self._hub.listen(SIMULATORS) as listener:
                try:
                    while True:
                        try:
                            await self._adopt(session)
                        except Exception:
                            log.exception("simulation terminals could not be adopted")
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(lease / 3):
                                await listener.get()
                finally:
                    await self._stop_all()

    async def _adopt(self, session: aiohttp.ClientSession) -> None:
        terminals = self._ctx.terminals
        for terminal_id in await terminals.simulated_ids():
            ours = await self._ctx.presence.take_lease(
                terminal_id, self._owner, self._ctx.settings.simulator_lease
            )
            task = self._running.get(terminal_id)
            if ours and (task is None or task.done()):
                self._running[terminal_id] = asyncio.create_task(
                    self._keep_connected(session, terminal_id), name=f"simulator-{terminal_id}"
                )
            elif not ours and task is not None:
                task.cancel()  # another process holds the lease now
                del self._running[terminal_id]

    async def _keep_connected(self, session: aiohttp.ClientSession, terminal_id: str) -> None:
        url = connect_url(self._ctx)
        delay = self._ctx.settings.terminal_step_delay
        while True:
            secret = await self._ctx.terminals.rotate_secret(terminal_id)
            try:
                await SimulatedTerminal(session, url, secret, delay).run()
            except (aiohttp.ClientError, OSError) as exc:
                log.warning("simulation terminal %s could not connect: %s", terminal_id, exc)
            await asyncio.sleep(RECONNECT_DELAY)

    async def _stop_all(self) -> None:
        tasks = list(self._running.items())
        self._running.clear()
        for _, task in tasks:
            task.cancel()
        for terminal_id, task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await self._ctx.presence.release_lease(terminal_id, self._owner)


SIMULATOR_TASK = web.AppKey("simulator_task", dict[str, asyncio.Task[None]])


def install(app: web.Application) -> None:
    """Run simulation terminals in this API process; they stop first at shutdown."""
    app[SIMULATOR_TASK] = {}
    app.cleanup_ctx.append(_run)
    app.on_shutdown.insert(0, _stop)


async def _run(app: web.Application) -> AsyncIterator[None]:
    host = SimulatorHost(app[CONTEXT], app[HUB])
    app[SIMULATOR_TASK]["host"] = asyncio.create_task(host.run(), name="simulator-host")
    yield
    await _stop(app)


async def _stop(app: web.Application) -> None:
    task = app[SIMULATOR_TASK].pop("host", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
