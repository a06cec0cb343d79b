"""The plans of the listing's queries: prepared and executed as a pool connection executes
them, explained with ``ANALYZE, BUFFERS`` and judged."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import orjson

from svc.db import Unit

log = logging.getLogger(__name__)


SORT_PAGES = 10
"""A Sort of more than this many pages of rows fails a plan: its cost grows with the list."""
BIG_TABLE = 10_000
"""A Seq Scan of a table or partition of more rows than this fails a plan."""
PLAN_RUNS = 8
"""Executions of a prepared query before it is explained: past PostgreSQL's five custom
plans, after which a prepared statement may switch to the generic plan."""


def _literal(value: Any) -> str:
    """``value`` as a SQL literal for ``EXECUTE``: a text, a timestamptz, a number, a text[]."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return _literal(value.isoformat())
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(_literal(item) for item in value) + "]::text[]"
    raise TypeError(f"no literal for {value!r}")


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)


def _rows(node: dict[str, Any]) -> float:
    """Rows a node produced (over all its loops), or the planner's estimate if it never ran."""
    loops = node.get("Actual Loops", 0)
    return float(node["Actual Rows"] * loops if loops else node["Plan Rows"])


async def explain(unit: Unit, sql: str, args: list[Any], limit: int) -> dict[str, Any]:
    """The plan PostgreSQL runs ``sql`` with on a connection that prepared it and executed it
    ``PLAN_RUNS`` times, explained with ANALYZE and BUFFERS; which indexes it read, how many
    rows its scans read (kept or filtered out), and what fails it (a Seq Scan of a large
    table, a Sort of more than ``SORT_PAGES`` pages of ``limit`` rows, no index)."""
    values = ", ".join(_literal(arg) for arg in args)
    await unit.execute(f"PREPARE listing_page AS {sql}")
    try:
        for _ in range(PLAN_RUNS):
            await unit.execute(f"EXECUTE listing_page({values})")
        explained = f"EXPLAIN (ANALYZE, BUFFERS{{}}) EXECUTE listing_page({values})"
        text = "\n".join(row[0] for row in await unit.fetch(explained.format("")))
        [tree] = orjson.loads(await unit.fetchval(explained.format(", FORMAT JSON")))
        kinds = await unit.fetchrow(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1",
            "listing_page",
        )
    finally:
        await unit.execute("DEALLOCATE listing_page")
    nodes = list(_nodes(tree["Plan"]))
    relations = [n["Relation Name"] for n in nodes if "Relation Name" in n]
    sizes = {
        row["relname"]: float(row["reltuples"])
        for row in await unit.fetch(
            "SELECT relname, reltuples FROM pg_class WHERE relname = ANY($1::text[])", relations
        )
    }
    parents = {
        row["part"]: row["parent"]
        for row in await unit.fetch(
            """SELECT c.relname AS part, p.relname AS parent FROM pg_inherits i
               JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
               WHERE c.relkind = 'i'"""
        )
    }
    indexes: list[str] = []
    problems: list[str] = []
    read = 0.0
    for node in nodes:
        if "Relation Name" in node:
            removed = node.get("Rows Removed by Filter", 0)
            removed += node.get("Rows Removed by Index Recheck", 0)
            read += (node.get("Actual Rows", 0) + removed) * node.get("Actual Loops", 0)
        kind = node["Node Type"]
        name = node.get("Index Name")
        if name and node.get("Actual Loops", 0) > 0:
            index = parents.get(name, name)
            if index not in indexes:
                indexes.append(index)
        if "Seq Scan" in kind and sizes.get(node["Relation Name"], 0) > BIG_TABLE:
            problems.append(f"{kind} on {node['Relation Name']}")
        if kind.endswith("Sort") and any(
            _rows(c) > SORT_PAGES * limit for c in node.get("Plans", ())
        ):
            rows = max(_rows(c) for c in node["Plans"])
            problems.append(f"{kind} of {rows:,.0f} rows")
    if not indexes:
        problems.append("no index read")
    top = tree["Plan"]
    return {
        "indexes": indexes,
        "problems": problems,
        "plan_ok": not problems,
        "plan_kind": "generic" if kinds and kinds["generic_plans"] else "custom",
        "rows_read": round(read),
        "execution_ms": round(tree["Execution Time"], 3),
        "planning_ms": round(tree["Planning Time"], 3),
        "shared_hit": top.get("Shared Hit Blocks", 0),
        "shared_read": top.get("Shared Read Blocks", 0),
        "plan": text,
    }
