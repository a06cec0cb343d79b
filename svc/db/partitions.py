"""Daily range partitions of events and delivery attempts: created ahead, dropped whole.

Retention never deletes the log row by row: a partition whose whole day is older than
``SVC_EVENT_RETENTION`` is dropped, and with it the hours of the endpoints' delivery health
aggregate (a few rows per endpoint and hour) that are older than the retention. Partition
upkeep takes a transaction-level advisory lock, so several schedulers (and ``svc migrate``)
never race on the catalogue.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, date, datetime, timedelta

from svc.db.database import Unit

log = logging.getLogger(__name__)

PARTITIONED = ("events", "delivery_attempts")
DAYS_AHEAD = 7
LOCK_ID = 0x5356_435F_5041_5254 - (1 << 63)  # "SVC_PART"
_SUFFIX = re.compile(r"_p([0-9]{8})")


def partition_name(table: str, day: date) -> str:
    return f"{table}_p{day:%Y%m%d}"


async def ensure_partitions(
    unit: Unit, today: date | None = None, days_ahead: int = DAYS_AHEAD
) -> list[str]:
    """Create the partitions from yesterday to ``days_ahead`` days on; returns new names."""
    today = today or datetime.now(UTC).date()
    await unit.execute("SELECT pg_advisory_xact_lock($1)", LOCK_ID)
    created = []
    for table in PARTITIONED:
        existing = set(await _partitions(unit, table))
        for offset in range(-1, days_ahead + 1):
            day = today + timedelta(days=offset)
            name = partition_name(table, day)
            if name in existing:
                continue
            await unit.execute(
                f"CREATE TABLE {name} PARTITION OF {table} "
                f"FOR VALUES FROM ('{day.isoformat()} 00:00:00+00') "
                f"TO ('{(day + timedelta(days=1)).isoformat()} 00:00:00+00')"
            )
            created.append(name)
    if created:
        log.info("created partitions %s", ", ".join(created))
    return created


async def drop_expired(unit: Unit, retention_s: float, now: datetime | None = None) -> list[str]:
    """Drop every partition whose day ended more than ``retention_s`` ago; returns names."""
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=retention_s)
    await unit.execute("SELECT pg_advisory_xact_lock($1)", LOCK_ID)
    dropped = []
    for table in PARTITIONED:
        for name in await _partitions(unit, table):
            match = _SUFFIX.search(name)
            if match is None:
                continue
            day = datetime.strptime(match.group(1), "%Y%m%d").replace(tzinfo=UTC)
            if day + timedelta(days=1) <= cutoff:
                await unit.execute(f"DROP TABLE {name}")
                dropped.append(name)
    await unit.execute("DELETE FROM endpoint_hourly_outcomes WHERE hour < $1", cutoff)
    if dropped:
        log.info("dropped expired partitions %s", ", ".join(dropped))
    return dropped


async def _partitions(unit: Unit, table: str) -> list[str]:
    rows = await unit.fetch(
        """SELECT c.relname FROM pg_inherits i
           JOIN pg_class c ON c.oid = i.inhrelid
           JOIN pg_class p ON p.oid = i.inhparent
           WHERE p.relname = $1 AND p.relnamespace = to_regnamespace(current_schema())::oid
           ORDER BY c.relname""",
        table,
    )
    return [str(row["relname"]) for row in rows]
