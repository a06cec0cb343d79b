"""Payment deadlines: open online payments expire (``canceled``), terminal payments whose
terminal never answered fail (``failed``, ``terminal_timeout``).

Several schedulers may sweep at once: each transition locks its payment, so a payment moves
once.
"""

from __future__ import annotations

import logging

from svc.context import Context
from svc.db.times import now_ms
from svc.payments import flow

log = logging.getLogger(__name__)


async def expire_due(ctx: Context) -> int:
    """End every open payment past its deadline; returns how many were ended."""
    ended = 0
    for payment_id in await ctx.payments.due(now_ms()):
        payment = await ctx.payments.get(payment_id)
        if payment is None or payment.final:
            continue
        if payment.channel == "terminal":
            changes = {"failure_code": "terminal_timeout"}
            moved = await flow.move(ctx, payment_id, "failed", changes)
        else:
            moved = await flow.move(ctx, payment_id, "canceled", {"cancel_reason": "expired"})
        if moved is not None and moved.event is not None:
            ended += 1
    if ended:
        log.info("ended %d payments past their deadline", ended)
    return ended
