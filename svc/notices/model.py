"""Operational events, email notices and notification addresses: records and pure rules.

An operational event tells an organisation about the delivery of its webhooks: an endpoint
failing, turned off or on, an event whose retries ran out. A notice is the email of one of
them (failing, disabled, exhausted), naming the endpoint and linking to its dashboard page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from typing import Any

FAILING = "webhook_endpoint.failing"
DISABLED = "webhook_endpoint.disabled"
ENABLED = "webhook_endpoint.enabled"
EXHAUSTED = "delivery.exhausted"
MAILED = (FAILING, DISABLED, EXHAUSTED)
"""The operational events that are mailed too."""
MAX_EMAILS = 10
"""Most notification addresses an organisation names per environment."""
MAX_EMAIL_LENGTH = 254
# One @, no spaces or angle brackets, a dotted domain: bounded, no backtracking.
_EMAIL = re.compile(r"[^@\s<>,;\"]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})+")
MAX_TRIES = 12
"""Tries of a notice's mail before it is given up (about five hours of back-off)."""
FIRST_BACKOFF = 30.0
LONGEST_BACKOFF = 3600.0


def valid_email(address: str) -> bool:
    return len(address) <= MAX_EMAIL_LENGTH and _EMAIL.fullmatch(address) is not None


def backoff(tries: int) -> float:
    """Seconds before the next try of a mail that failed ``tries`` times."""
    return min(LONGEST_BACKOFF, FIRST_BACKOFF * 2.0 ** max(0, tries - 1))


def event_data(endpoint_id: str, url: str, **more: Any) -> dict[str, Any]:
    """The ``data`` of an operational event about an endpoint."""
    return {"endpoint_id": endpoint_id, "url": url, **more}


@dataclass(frozen=True, slots=True)
class Notice:
    """A mail to send about an endpoint: ``detail`` is the reason of a disabling or the id
    of an exhausted event."""

    id: int
    org: str
    env: str
    kind: str
    endpoint_id: str
    url: str
    detail: str
    tries: int


@dataclass(frozen=True, slots=True)
class Exhausted:
    """An event whose retries ran out at an endpoint; ``first`` when it is the first of the
    endpoint's episode (the one that is mailed)."""

    endpoint_id: str
    org: str
    env: str
    url: str
    first: bool


_SUBJECTS = {
    FAILING: "Webhook endpoint {endpoint_id} is failing",
    DISABLED: "Webhook endpoint {endpoint_id} was disabled",
    EXHAUSTED: "Deliveries to webhook endpoint {endpoint_id} gave up",
}
_DISABLED_WHY = {
    "failing": "the service turned it off because every delivery attempt failed for too long",
    "manual": "it was turned off by hand",
}


def compose(notice: Notice, sender: str, to: list[str], dashboard_url: str) -> EmailMessage:
    """The mail of ``notice`` to ``to``; ``dashboard_url`` is the dashboard's base URL."""
    page = f"{dashboard_url}/webhooks/{notice.endpoint_id}"
    if notice.kind == FAILING:
        what = "Every delivery attempt at this endpoint has failed for a while."
    elif notice.kind == DISABLED:
        why = _DISABLED_WHY.get(notice.detail, notice.detail)
        what = f"The endpoint is disabled: {why}. It gets no deliveries until it is enabled."
    else:
        what = (
            f"The retries of event {notice.detail} ran out at this endpoint; "
            "later ones may follow without another mail until it succeeds again."
        )
    message = EmailMessage()
    message["From"] = sender
    message["To"] = ", ".join(to)
    # Date and Message-ID are the sender's to write (RFC 5322); mail without them is often
    # taken for spam. The id's domain is the sender's.
    message["Date"] = formatdate(usegmt=True)
    domain = parseaddr(sender)[1].rpartition("@")[2] or "localhost"
    message["Message-ID"] = make_msgid(domain=domain)
    message["Subject"] = _SUBJECTS[notice.kind].format(endpoint_id=notice.endpoint_id)
    message.set_content(
        f"{what}\n\n"
        f"Endpoint: {notice.endpoint_id}\n"
        f"URL: {notice.url}\n"
        f"Environment: {notice.env}\n\n"
        f"See its delivery log and health: {page}\n"
    )
    return message
