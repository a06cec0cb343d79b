"""Disabling endpoints whose every delivery attempt has failed for ``SVC_ENDPOINT_DISABLE_AFTER``.

A disabled endpoint gets no new jobs, but its events are still stored: once its owner has
fixed it and turned it on again (``PATCH … {"disabled": false}``), a bulk recover sends them.
Several schedulers may run this at once: each endpoint is disabled, counted and announced
by one of them only (``svc.webhooks.store``).
"""

from __future__ import annotations

import logging

from svc.context import Context
from svc.settings import Settings
from svc.webhooks import flow

log = logging.getLogger(__name__)

LONGEST_INTERVAL = 600.0


def check_interval(settings: Settings) -> float:
    """How often to look: every ten minutes, or a tenth of the window when that is shorter."""
    return min(LONGEST_INTERVAL, settings.endpoint_disable_after / 10)


async def disable_failing(ctx: Context, at_ms: int | None = None) -> int:
    """Disable the endpoints failing for the whole window; returns how many were."""
    window = ctx.settings.endpoint_disable_after
    disabled = await flow.disable_failing(ctx, window, at_ms)
    if disabled:
        ctx.metrics.endpoints_disabled.inc(len(disabled))
        log.warning(
            "disabled %d endpoints whose every attempt failed for %.0f s: %s",
            len(disabled),
            window,
            ", ".join(disabled),
        )
    return len(disabled)
