"""Schemathesis hooks of tests/api/test_schemathesis.py (loaded through SCHEMATHESIS_HOOKS)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import schemathesis

from svc import cursors

KEY = "Idempotency-Key"
CURSOR = re.compile(rf"[A-Za-z0-9_-]{{0,{cursors.MAX_LENGTH}}}")
VALID_KEY = re.compile(r"[!-~]([ -~]{0,253}[!-~])?")


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    """Make each valid generated ``Idempotency-Key`` unique; leave invalid ones as generated.

    Generated keys repeat ("0", "M", ...): a repeated key with other parameters is rightly a
    422 ``idempotency_key_reused``, and with the same parameters a replay of a resource that
    may be gone since. Neither is a mismatch with the description. Coverage cases are left
    alone: they are checked one by one against their own generated scenario.
    """
    query = case.query or {}
    if isinstance(query.get("cursor"), str) and CURSOR.fullmatch(query["cursor"]):
        # Cursors are opaque: only one the service handed out is valid, and a generated
        # one never is. Their rules are tested in tests/api/test_problems.py.
        del query["cursor"]
    if "created[gte]" in query and "created[lt]" in query:
        # A generated range is as likely reversed as not, which the description cannot say
        # and the API rightly answers 422 invalid_range; each end is still generated alone.
        # The range's rules are tested in tests/integration/test_listing.py.
        del query["created[lt]"]
    meta = getattr(case, "meta", None)
    if meta is not None and str(meta.phase.name) == "coverage":
        return
    key = (case.headers or {}).get(KEY)
    if isinstance(key, str) and VALID_KEY.fullmatch(key):
        case.headers[KEY] = f"{key}-{uuid.uuid4().hex}"[-255:]
