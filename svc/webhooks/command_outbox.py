"""Resend and test-send requests through an outbox, like events: never lost after the commit.

A request is staged in the caller's transaction (its idempotency record commits with it),
published to ``<ns>.commands`` with a broker confirm after the commit, and its row deleted.
A publish that fails, or a process that dies before it, leaves the row to ``sweep``; so does
a broker that blocks publishing (``svc.amqp.flow``): the publish is not tried then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from svc.amqp.commands import Resend
from svc.context import Context
from svc.db import Unit
from svc.db.times import to_dt

log = logging.getLogger(__name__)

PUBLISH_BATCH = 500


async def stage(ctx: Context, unit: Unit, command: Resend) -> None:
    """Keep ``command`` in ``unit``; publish it once the transaction has committed."""
    row_id = await unit.fetchval(
        "INSERT INTO command_outbox (body) VALUES ($1) RETURNING id", command.to_body()
    )
    unit.after_commit(lambda: _publish_committed(ctx, row_id, command))


async def stage_all(ctx: Context, unit: Unit, commands: Sequence[Resend]) -> None:
    """Keep many commands in ``unit`` with one statement; publish them in their order, in
    batches, once the transaction has committed (a bulk recover stages thousands)."""
    if not commands:
        return
    rows = await unit.fetch(
        """INSERT INTO command_outbox (body)
           SELECT body FROM unnest($1::bytea[]) WITH ORDINALITY AS c(body, i) ORDER BY i
           RETURNING id""",
        [command.to_body() for command in commands],
    )
    # Ids are drawn in insertion order, which the ORDER BY fixes: sorted, they pair up.
    row_ids = sorted(row["id"] for row in rows)
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
                await asyncio.gather(*(ctx.broker.command(command) for command in batch))
        except Exception as exc:  # the rows keep the requests; the sweep sends them
            ctx.metrics.publish_failures.inc()
            log.warning(
                "%d requests not published yet (%s); the sweep will", len(commands) - start, exc
            )
            return
        try:
            sent = row_ids[start : start + PUBLISH_BATCH]
            await ctx.db.execute("DELETE FROM command_outbox WHERE id = ANY($1::bigint[])", sent)
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
        await ctx.db.execute("DELETE FROM command_outbox WHERE id = $1", row_id)
    except Exception as exc:  # sent again by the sweep: a resend twice at worst
        log.warning("command outbox row %d not cleared: %s", row_id, exc)


async def sweep(ctx: Context, older_than_ms: int, limit: int = 500) -> int:
    """Publish requests staged before ``older_than_ms`` whose publish was lost; how many.

    Rows are locked with ``SKIP LOCKED`` until confirmed and deleted, so schedulers sweeping
    at once never send one twice at the same time.
    """
    async with ctx.db.transaction() as unit:
        rows = await unit.fetch(
            """SELECT id, body FROM command_outbox WHERE created_at < $1
               ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED""",
            to_dt(older_than_ms),
            limit,
        )
        async with asyncio.timeout(ctx.settings.batch_publish_timeout):
            commands = [Resend.from_body(row["body"]) for row in rows]
            await asyncio.gather(*map(ctx.broker.command, commands))
        await unit.execute(
            "DELETE FROM command_outbox WHERE id = ANY($1::bigint[])", [row["id"] for row in rows]
        )
    return len(rows)
