"""Terminal presence: a terminal whose connection's process died goes offline.

A connection renews a presence lease every third of ``SVC_TERMINAL_PRESENCE_TTL``; the
API process that held it cannot say ``offline`` after a crash, so the scheduler does.
"""

from __future__ import annotations

from svc.context import Context
from svc.terminal.flow import sweep_orphans


async def sweep_presence(ctx: Context) -> int:
    """Mark orphaned terminals offline (emitting ``terminal.offline``); returns how many."""
    return await sweep_orphans(ctx)
