"""Staged writes of a unit of work go to PostgreSQL as one statement."""

from __future__ import annotations

from svc.db.database import combined


def test_one_write_is_sent_as_it_is() -> None:
    query = "INSERT INTO outbox (event_id, created_at) VALUES ($1, $2)"
    assert combined([(query, ("evt_1", 5))]) == (query, ["evt_1", 5])


def test_writes_become_withs_of_the_last_with_their_parameters_renumbered() -> None:
    query, args = combined(
        [
            ("INSERT INTO a (x, y) VALUES ($1, $2)", (1, 2)),
            ("INSERT INTO b (x) VALUES ($1)", (3,)),
            ("UPDATE c SET x = $2 WHERE id = $1 AND $10 IS NULL", ("c1", 4, *range(8))),
        ]
    )
    assert query == (
        "WITH w0 AS (INSERT INTO a (x, y) VALUES ($1, $2)), "
        "w1 AS (INSERT INTO b (x) VALUES ($3)) "
        "UPDATE c SET x = $5 WHERE id = $4 AND $13 IS NULL"
    )
    assert args == [1, 2, 3, "c1", 4, *range(8)]
