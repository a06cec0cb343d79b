"""Use cases of telling an organisation about its endpoints.

``tell`` stages an operational event (``svc.envelope.OPERATIONAL``) in the unit of the change
it announces, with its outbox row, and, for the kinds that are mailed and when SMTP is
configured, a notice row the scheduler mails (``scheduler.notices``): both commit with the
change or not at all. The producers are the endpoint use cases (turned off or on by hand, by
the health check), the health check's failing endpoints and the record of attempts whose
retries ran out (``record_attempts``, the one place the delivery log records that state).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from svc.db import Unit
from svc.db.times import now_ms
from svc.envelope import OPERATIONAL, iso_ms, new_event
from svc.events.model import Attempt
from svc.metrics import OUTCOMES
from svc.notices.model import DISABLED, EXHAUSTED, FAILING, MAILED, event_data
from svc.orgs.model import Scope

if TYPE_CHECKING:
    from svc.context import Context

FAILED_OUTCOMES = frozenset(OUTCOMES) - {"success"}
"""Outcomes of attempts that were made and failed (a skipped delivery was not attempted)."""
FAILING_BATCH = 500


async def tell(
    ctx: Context,
    unit: Unit,
    kind: str,
    scope: Scope,
    endpoint_id: str,
    url: str,
    mail: bool = True,
    **more: Any,
) -> None:
    """Stage the operational event ``kind`` about an endpoint in ``unit`` and, for a kind
    that is mailed (and unless ``mail`` is false), its notice."""
    event = new_event(kind, scope.env, event_data(endpoint_id, url, **more))
    await ctx.publisher.stage(unit, event, scope.org)
    if mail and kind in MAILED and ctx.settings.smtp_host:
        detail = str(more.get("reason") or more.get("event_id") or "")
        await ctx.notices.stage(unit, scope, kind, endpoint_id, url, detail, now_ms())


def exhausted(attempt: Attempt) -> bool:
    """Whether ``attempt`` failed with no next one: the ladder ran out. Events about delivery
    itself are left out, so two failing endpoints never tell each other of each other."""
    return (
        attempt.next_attempt_ms is None
        and attempt.outcome in FAILED_OUTCOMES
        and attempt.event_type not in OPERATIONAL
    )


async def record_attempts(
    ctx: Context, attempts: Sequence[Attempt], again: bool = False
) -> list[None]:
    """Write a batch of attempts to the delivery log; when the retries of some ran out, in
    one transaction with their ``delivery.exhausted`` events and the first notice of each
    endpoint's episode. A batch without such an attempt (nearly every one) is the plain
    ``COPY`` it always was. ``again``: see ``DeliveryLog.record``."""
    ran_out = [a for a in attempts if exhausted(a)]
    if not ran_out:
        return await ctx.deliveries.record(attempts, again=again)
    async with ctx.unit() as unit:
        await ctx.deliveries.record(attempts, unit, again)
        marked = await ctx.notices.mark_exhausted(unit, [a.endpoint_id for a in ran_out], now_ms())
        mailed: set[str] = set()
        for attempt in ran_out:
            endpoint = marked.get(attempt.endpoint_id)
            if endpoint is None:  # deleted since
                continue
            mail = endpoint.first and endpoint.endpoint_id not in mailed
            mailed.add(endpoint.endpoint_id)
            await tell(
                ctx,
                unit,
                EXHAUSTED,
                Scope(endpoint.org, endpoint.env),
                endpoint.endpoint_id,
                endpoint.url,
                mail=mail,
                event_id=attempt.event_id,
                event_type=attempt.event_type,
            )
    return [None] * len(attempts)


async def tell_failing(ctx: Context, window: float, at_ms: int | None = None) -> list[str]:
    """Send ``webhook_endpoint.failing`` (and its notice) for each enabled endpoint whose
    attempts have all failed for ``window`` seconds, once per episode; returns their ids."""
    at_ms = now_ms() if at_ms is None else at_ms
    cutoff = at_ms - round(window * 1000)
    told: list[str] = []
    while found := await ctx.endpoints.failing(cutoff, FAILING_BATCH, unnoticed=True):
        async with ctx.unit() as unit:
            for endpoint_id, scope, url in await ctx.notices.mark_failing(unit, found, at_ms):
                await tell(
                    ctx, unit, FAILING, scope, endpoint_id, url, failing_since=iso_ms(cutoff)
                )
                told.append(endpoint_id)
        if len(found) < FAILING_BATCH:
            break
    return told


async def tell_disabled(
    ctx: Context, unit: Unit, scope: Scope, endpoint_id: str, url: str, reason: str
) -> None:
    await tell(ctx, unit, DISABLED, scope, endpoint_id, url, reason=reason)


async def end_episodes(ctx: Context) -> list[str]:
    """End the failure episodes of endpoints that succeeded since they were told of."""
    return await ctx.notices.end_episodes()


async def set_emails(ctx: Context, scope: Scope, emails: Sequence[str]) -> list[str]:
    """Name ``scope``'s notification addresses (replacing those it had); returns them."""
    async with ctx.unit() as unit:
        await ctx.notices.set_emails(unit, scope, emails, now_ms())
    return list(emails)
