"""Money timers: scheduled payouts, and refunds left pending by a process that died.

Several schedulers may run them at once. Payouts lock each balance with ``SKIP LOCKED`` and
record the run in the payout's transaction (``svc.money.flow.payouts``); refunds are settled under
a lock of their row and only while still pending (``svc.money.flow.refunds``).
"""

from __future__ import annotations

import logging
import time

from svc.context import Context
from svc.money.flow import payouts, refunds
from svc.money.model.schedule import PayoutSchedule

log = logging.getLogger(__name__)


async def pay_out_due(ctx: Context, schedule: PayoutSchedule) -> int:
    """Pay out every balance due in the current period; returns how many payouts were made."""
    paid = await payouts.pay_out_due(ctx, schedule)
    if paid:
        log.info("paid out %d balances", paid)
    return paid


async def settle_stragglers(ctx: Context) -> int:
    """Settle refunds pending for longer than ``SVC_OUTBOX_SWEEP_AGE``: their process died
    between creating and settling them."""
    cutoff = int((time.time() - ctx.settings.outbox_sweep_age) * 1000)
    found = await refunds.settle_stragglers(ctx, cutoff)
    if found:
        log.warning("settled %d refunds left pending", found)
    return found
