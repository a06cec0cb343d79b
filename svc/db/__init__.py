"""PostgreSQL, the system of record: the pool, units of work, migrations and partitions."""

from svc.db.database import Database, Queries, Unit, lock_id, open_database

__all__ = ["Database", "Queries", "Unit", "lock_id", "open_database"]
