"""Mailing notices: the scheduler drains the notices table (``svc.notices``) by SMTP.

Notices are staged with the change they tell of, anywhere (the API, the dispatcher's record
of an exhausted delivery, the health check); only this timer speaks SMTP, so no delivery ever
waits for a mail server. Each due notice is mailed to its organisation's addresses for its
environment; a notice whose mail fails is tried again with back-off, up to ``MAX_TRIES``. The
rows stay locked while they are mailed, so schedulers draining at once never send one twice
at the same time; a scheduler that dies mid-send leaves its rows to the next (a mail twice at
worst). ``svc_notices_total`` counts each notice's outcome. Without ``SVC_SMTP_HOST`` nothing
is staged and nothing is mailed.
"""

from __future__ import annotations

import logging
import time

import aiosmtplib

from svc.context import Context
from svc.notices.model import MAX_TRIES, backoff, compose
from svc.orgs.model import Scope
from svc.settings import Settings

log = logging.getLogger(__name__)

BATCH = 20
SEND_TIMEOUT = 20.0
INTERVAL = 5.0


def mail_enabled(settings: Settings) -> bool:
    """Whether notices are mailed; says so once, at start-up, when they are not."""
    if not settings.smtp_host:
        log.info("SVC_SMTP_HOST is not set: no email notices (operational events still are sent)")
        return False
    log.info("email notices go through %s:%d", settings.smtp_host, settings.smtp_port)
    return True


async def mail_due(ctx: Context, at_ms: int | None = None) -> int:
    """Mail the notices due now; returns how many mails were sent."""
    settings = ctx.settings
    if not settings.smtp_host:
        return 0
    at_ms = int(time.time() * 1000) if at_ms is None else at_ms
    sent = 0
    counted = ctx.metrics.notices
    async with ctx.db.transaction() as unit:
        finished: list[int] = []
        for notice in await ctx.notices.due(unit, at_ms, BATCH):
            emails = await ctx.notices.emails(Scope(notice.org, notice.env), unit)
            if not emails:  # nobody named: nothing to tell
                counted.labels("unaddressed").inc()
                finished.append(notice.id)
                continue
            message = compose(notice, settings.smtp_from, emails, settings.dashboard_url)
            try:
                await aiosmtplib.send(
                    message,
                    hostname=settings.smtp_host,
                    port=settings.smtp_port,
                    start_tls=settings.smtp_starttls,
                    username=settings.smtp_user or None,
                    password=settings.smtp_password or None,
                    timeout=SEND_TIMEOUT,
                )
            except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
                tries = notice.tries + 1
                if tries >= MAX_TRIES:
                    log.error("notice %d about %s given up: %s", notice.id, notice.endpoint_id, exc)
                    counted.labels("given_up").inc()
                    finished.append(notice.id)
                else:
                    log.warning("notice %d not mailed yet (%s)", notice.id, exc)
                    counted.labels("retried").inc()
                    due_ms = at_ms + round(backoff(tries) * 1000)
                    await ctx.notices.again(unit, notice.id, due_ms, str(exc))
                continue
            counted.labels("sent").inc()
            finished.append(notice.id)
            sent += 1
        await ctx.notices.done(unit, finished)
    return sent
