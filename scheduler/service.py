"""Running a scheduler process: the commands consumer and the timers.

The scheduler is off the delivery path: dispatchers fan events out and hand failures to the
retry ladder themselves, so deliveries and retries go on while every scheduler is down.
"""

from __future__ import annotations

import asyncio

from scheduler.commands import Commands
from scheduler.endpoint_health import check_health, check_interval
from scheduler.expiry import expire_due
from scheduler.money import pay_out_due, settle_stragglers
from scheduler.notices import INTERVAL, mail_due, mail_enabled
from scheduler.presence import sweep_presence
from scheduler.rescue import Rescuer, rescue_interval
from scheduler.timers import every, refresh_queue_depths, sweep_outbox, upkeep
from svc.amqp.consuming import consume
from svc.context import Context
from svc.money.model.schedule import PayoutSchedule

PREFETCH = 200


async def run(ctx: Context, stop: asyncio.Event) -> None:
    topology, settings = ctx.topology, ctx.settings
    async with asyncio.TaskGroup() as group:
        group.create_task(consume(ctx, topology.commands, Commands(ctx).handle, PREFETCH, stop))
        group.create_task(every(settings.outbox_sweep_interval, lambda: sweep_outbox(ctx), stop))
        group.create_task(
            every(settings.queue_stats_interval, lambda: refresh_queue_depths(ctx), stop)
        )
        group.create_task(every(settings.expiry_sweep_interval, lambda: expire_due(ctx), stop))
        group.create_task(every(settings.maintenance_interval, lambda: upkeep(ctx), stop))
        presence_interval = settings.terminal_presence_ttl / 3
        group.create_task(every(presence_interval, lambda: sweep_presence(ctx), stop))
        group.create_task(every(check_interval(settings), lambda: check_health(ctx), stop))
        if mail_enabled(settings):
            group.create_task(every(INTERVAL, lambda: mail_due(ctx), stop))
        rescuer = Rescuer(ctx)
        rescue_every = rescue_interval(settings.retry_rescue_after)
        group.create_task(every(rescue_every, rescuer.sweep, stop))
        group.create_task(
            every(settings.outbox_sweep_interval, lambda: settle_stragglers(ctx), stop)
        )
        schedule = PayoutSchedule.parse(settings.payout_schedule)
        if schedule.automatic:
            payouts = every(schedule.check_interval, lambda: pay_out_due(ctx, schedule), stop)
            group.create_task(payouts)
