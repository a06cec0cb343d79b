"""Payment deadlines: open online payments expire (``canceled``), terminal payments whose
terminal never answered fail (``failed``, ``terminal_timeout``).

Several schedulers may sweep at once: each transition is optimistic, so a payment moves once.
"""

from __future__ import annotations

import logging

from svc import payflow
from svc.context import Context
from svc.store.payments import now_ms

log = logging.getLogger(__name__)


async def expire_due(ctx: Context) -> int:
    """End every open payment past its deadline; returns how many were ended."""
    ended = 0
    for payment_id in await ctx.payments.due(now_ms()):
        payment = await ctx.payments.get(payment_id)
        if payment is None or payment.final:
            await ctx.payments.forget_deadline(payment_id)
            continue
        if payment.channel == "terminal":
            moved = await payflow.move(
                ctx, payment_id, "failed", {"failure_code": "terminal_timeout"}
            )
        else:
            moved = await payflow.move(ctx, payment_id, "canceled", {"cancel_reason": "expired"})
        if moved is not None and moved.event is not None:
            ended += 1
        elif moved is not None and not moved.payment.final:
            # Not allowed from its state (cannot happen with the transition table): drop it
            # from the sweep rather than retrying it every interval.
            await ctx.payments.forget_deadline(payment_id)
    if ended:
        log.info("ended %d payments past their deadline", ended)
    return ended
