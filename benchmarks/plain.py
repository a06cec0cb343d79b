"""What the Celery and Dramatiq baselines share: plain signing, a session per thread, a failure."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time

import requests


class DeliveryFailed(Exception):
    """The endpoint answered with a non-2xx status."""


class Sessions(threading.local):
    """One ``requests.Session`` per thread (per greenlet once gevent has patched threading)."""

    session: requests.Session | None = None

    def get(self) -> requests.Session:
        if self.session is None:
            self.session = requests.Session()
        return self.session


def sign(secret: str, body: bytes) -> str:
    """The ``Svc-Signature`` value, computed the obvious way (keyed anew for every message)."""
    now = int(time.time())
    digest = hmac.new(secret.encode(), b"%d.%s" % (now, body), hashlib.sha256).hexdigest()
    return f"t={now},v1={digest}"


def post(sessions: Sessions, url: str, secret: str, body: str, event_id: str) -> None:
    """Sign and POST one delivery; raise on a non-2xx answer so the framework retries."""
    data = body.encode()
    headers = {
        "Content-Type": "application/json",
        "Svc-Signature": sign(secret, data),
        "Svc-Event-Id": event_id,
    }
    response = sessions.get().post(
        url, data=data, headers=headers, timeout=10, allow_redirects=False
    )
    if not 200 <= response.status_code <= 299:
        raise DeliveryFailed(response.status_code)
