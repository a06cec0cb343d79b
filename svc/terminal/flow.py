"""Terminal use cases: a device connection takes or leaves its terminal, and a test
organisation gets its simulation terminal on first use.

A change of status emits ``terminal.online`` or ``terminal.offline`` in the same unit of
work as the record; listeners of the terminal's presence are woken after the commit.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from svc.envelope import new_event
from svc.orgs import Scope
from svc.pubsub import wakeups as signals

if TYPE_CHECKING:
    from svc.context import Context

log = logging.getLogger(__name__)


async def connect(ctx: Context, terminal_id: str, conn: str) -> bool:
    """The device connection ``conn`` now holds the terminal; True when it went online."""
    return await _presence(ctx, terminal_id, conn, "online")


async def disconnect(ctx: Context, terminal_id: str, conn: str) -> bool:
    """``conn`` closed: offline, unless a newer connection already holds the terminal."""
    return await _presence(ctx, terminal_id, conn, "offline")


async def ensure_simulator(ctx: Context, scope: Scope) -> str | None:
    """Give a test-environment organisation its simulation terminal; the terminal's id when
    it was made just now (simulator hosts are told to adopt it), else None."""
    if scope.env != "test":
        return None
    terminal_id, created = await ctx.terminals.ensure_simulated(scope.org)
    if not created:
        return None
    await ctx.signal(signals.Signal(signals.SIMULATORS, {}))
    return terminal_id


async def _presence(ctx: Context, terminal_id: str, conn: str, status: str) -> bool:
    async with ctx.unit() as unit:
        terminal = await ctx.terminals.lock(unit, terminal_id)
        if terminal is None:
            return False
        if status == "offline" and terminal.conn != conn:
            return False  # a newer connection took over; it owns the presence now
        holder = conn if status == "online" else ""
        changed = terminal.status != status
        if not changed and terminal.conn == holder:
            return False
        moved = replace(
            terminal,
            status=status,
            conn=holder,
            status_ms=int(time.time() * 1000) if changed else terminal.status_ms,
        )
        await ctx.terminals.set_presence(unit, moved)
        if changed:
            event = new_event(f"terminal.{status}", terminal.env, moved.event_data())
            await ctx.publisher.stage(unit, event, terminal.org)
        signal = signals.Signal(signals.presence_topic(terminal_id), {"status": status})
        ctx.signal_after(unit, signal)
    return changed


async def sweep_orphans(ctx: Context) -> int:
    """Mark offline every online terminal whose holder stopped renewing its lease (its
    process died); returns how many went offline."""
    online = await ctx.terminals.online()
    holders = await ctx.presence.holders([t.id for t in online])
    count = 0
    for terminal, holder in zip(online, holders, strict=True):
        if holder == terminal.conn:
            continue
        if await disconnect(ctx, terminal.id, terminal.conn):
            log.warning("terminal %s lost its connection's process; now offline", terminal.id)
            count += 1
    return count
