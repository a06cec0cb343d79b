"""Terminal presence: a terminal whose connection's process died goes offline.

A connection renews a presence lease every third of ``SVC_TERMINAL_PRESENCE_TTL``; the
API process that held it cannot say ``offline`` after a crash, so the scheduler does.
"""

from __future__ import annotations

import logging

from svc import payflow
from svc.context import Context

log = logging.getLogger(__name__)


async def sweep_presence(ctx: Context) -> int:
    """Mark orphaned terminals offline (emitting ``terminal.offline``); returns how many."""
    count = 0
    for terminal in await ctx.terminals.orphaned():
        event = await ctx.terminals.disconnect(terminal.id, terminal.conn)
        await payflow.publish_presence(ctx, terminal.org, event)
        if event is not None:
            log.warning("terminal %s lost its connection's process; now offline", terminal.id)
            count += 1
    return count
