"""Endpoint health: telling of endpoints whose every delivery attempt has failed for
``SVC_ENDPOINT_FAILING_AFTER`` (``webhook_endpoint.failing``, once per episode), and
disabling those failing for ``SVC_ENDPOINT_DISABLE_AFTER``; an episode ends at the next
success (seen here, so that successes cost the dispatcher nothing more).

A disabled endpoint gets no new jobs, but its events are still stored: once its owner has
fixed it and turned it on again (``PATCH … {"disabled": false}``), a bulk recover sends them.
Several schedulers may run this at once: each endpoint is told of, disabled, counted and
announced by one of them only (``svc.webhooks.store``, ``svc.notices.store``).
"""

from __future__ import annotations

import logging

from svc.context import Context
from svc.notices import flow as notices
from svc.settings import Settings
from svc.webhooks import flow

log = logging.getLogger(__name__)

LONGEST_INTERVAL = 600.0


def check_interval(settings: Settings) -> float:
    """How often to look: every ten minutes, or a tenth of the shorter window when that is
    shorter."""
    window = min(settings.endpoint_disable_after, settings.endpoint_failing_after)
    return min(LONGEST_INTERVAL, window / 10)


async def check_health(ctx: Context, at_ms: int | None = None) -> None:
    """End the episodes that a success ended, tell of newly failing endpoints, disable those
    failing for the whole window."""
    await notices.end_episodes(ctx)
    told = await notices.tell_failing(ctx, ctx.settings.endpoint_failing_after, at_ms)
    if told:
        log.warning("endpoints failing: %s", ", ".join(told))
    await disable_failing(ctx, at_ms)


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
