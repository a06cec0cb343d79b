"""Use cases of events: emitting an event on its own, and resend and test-send requests
through the command outbox.

Emitting stores the event with its outbox row in one unit of work, then publishes it;
producers that change other state stage the event in their own unit instead
(``Publisher.stage``). A resend or test-send request is staged in the caller's transaction,
published to ``<ns>.commands`` with a broker confirm after the commit, and its row deleted:
never lost after the commit. A publish that fails, or a process that dies before it, leaves
the row to ``sweep_commands``; so does a broker that blocks publishing (``svc.amqp.flow``):
the publish is not tried then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from svc.amqp.commands import Resend
from svc.db import Unit
from svc.envelope import Event, new_event

if TYPE_CHECKING:
    from svc.context import Context

log = logging.getLogger(__name__)

PUBLISH_BATCH = 500


async def publish_event(ctx: Context, event: Event, org: str) -> None:
    """Store ``event`` (kept ``SVC_EVENT_RETENTION``) and publish it with a confirm."""
    async with ctx.unit() as unit:
        await ctx.publisher.stage(unit, event, org)


async def emit(ctx: Context, org: str, env: str, event_type: str, data: dict[str, Any]) -> Event:
    """Create, store and publish an event of ``event_type``; returns it."""
    event = new_event(event_type, env, data)
    await publish_event(ctx, event, org)
    return event


async def stage_command(ctx: Context, unit: Unit, command: Resend) -> None:
    """Keep ``command`` in ``unit``; publish it once the transaction has committed."""
    row_id = await ctx.command_outbox.insert(unit, command)
    unit.after_commit(lambda: _publish_committed(ctx, row_id, command))


async def stage_commands(ctx: Context, unit: Unit, commands: Sequence[Resend]) -> None:
    """Keep many commands in ``unit`` with one statement; publish them in their order, in
    batches, once the transaction has committed (a bulk recover stages thousands)."""
    if not commands:
        return
    row_ids = await ctx.command_outbox.insert_all(unit, commands)
    unit.after_commit(lambda: _publish_all_committed(ctx, row_ids, list(commands)))


async def _publish_all_committed(ctx: Context, row_ids: list[int], commands: list[Resend]) -> None:
    if ctx.blocked():  # the rows keep the requests; the sweep sends them
        ctx.metrics.publish_failures.inc()
        log.warning("%d requests not published: RabbitMQ blocks publishing", len(commands))
        return
    for start in range(0, len(commands), PUBLISH_BATCH):
        batch = commands[start : start + PUBLISH_BATCH]
        try:
            async with asyncio.timeout(ctx.settings.publish_timeout):
                await asyncio.gather(*map(ctx.broker.command, batch))
        except Exception as exc:  # the rows keep the requests; the sweep sends them
            ctx.metrics.publish_failures.inc()
            log.warning(
                "%d requests not published yet (%s); the sweep will", len(commands) - start, exc
            )
            return
        try:
            await ctx.command_outbox.delete(row_ids[start : start + PUBLISH_BATCH])
        except Exception as exc:  # sent again by the sweep: a resend twice at worst
            log.warning("%d command outbox rows not cleared: %s", len(batch), exc)


async def _publish_committed(ctx: Context, row_id: int, command: Resend) -> None:
    if ctx.blocked():  # the row keeps the request; the sweep sends it
        ctx.metrics.publish_failures.inc()
        log.warning("%s request not published: RabbitMQ blocks publishing", command.trigger)
        return
    try:
        async with asyncio.timeout(ctx.settings.publish_timeout):
            await ctx.broker.command(command)
    except Exception as exc:  # the row keeps the request; the sweep sends it
        ctx.metrics.publish_failures.inc()
        log.warning("%s request not published yet (%s); the sweep will", command.trigger, exc)
        return
    try:
        await ctx.command_outbox.delete([row_id])
    except Exception as exc:  # sent again by the sweep: a resend twice at worst
        log.warning("command outbox row %d not cleared: %s", row_id, exc)


async def sweep_commands(ctx: Context, older_than_ms: int, limit: int = 500) -> int:
    """Publish requests staged before ``older_than_ms`` whose publish was lost; how many.

    Rows stay locked until confirmed and deleted, so schedulers sweeping at once never send
    one twice at the same time.
    """
    async with ctx.db.transaction() as unit:
        rows = await ctx.command_outbox.lock_older(unit, older_than_ms, limit)
        async with asyncio.timeout(ctx.settings.batch_publish_timeout):
            await asyncio.gather(*(ctx.broker.command(command) for _, command in rows))
        await ctx.command_outbox.delete([row_id for row_id, _ in rows], unit)
    return len(rows)
