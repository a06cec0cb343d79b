"""The idempotency lookup reads a few index pages however many records the caller's key
holds, with the generic plan a pooled connection's prepared statement settles on and with the
statistics of a table that has just grown (a busy merchant's first hour), so a request's cost
does not grow with the records its scope keeps."""

from __future__ import annotations

import json

from svc.context import Context
from svc.crypto import digest
from svc.idempotency import LOOKUP

RECORDS = 5000


async def test_the_lookup_reads_a_few_pages_among_thousands_of_records(ctx: Context) -> None:
    async with ctx.db.transaction() as unit:
        await unit.execute(
            """INSERT INTO idempotency_keys (org_id, env, api_key_id, key_digest, fingerprint,
                   permissions, status, content_type, body, body_key_id, expires_at)
               SELECT 'org_busy', 'live', 'key_busy', sha256(g::text::bytea), 'fp', NULL, 201,
                   'application/json', '\\x00'::bytea, 'k', now() + interval '1 day'
               FROM generate_series(1, $1) AS g""",
            RECORDS,
        )
    for wanted in (b"42", b"absent"):  # a replay, and a new request
        key_digest = digest(wanted.decode()) if wanted == b"absent" else None
        async with ctx.db.transaction() as unit:
            await unit.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            plan = await unit.fetchval(
                f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {LOOKUP}",
                "org_busy",
                "live",
                key_digest or await unit.fetchval("SELECT sha256('42'::bytea)"),
                "key_busy",
                "",
            )
        pages = json.loads(plan)[0]["Plan"]["Shared Hit Blocks"]
        assert pages <= 20, f"{pages} pages read for one lookup among {RECORDS} records"
