"""The fast path under every relational operation: compiled statements, held connections,
reused greenlets.

- ``prepared``: one statement compiled once for one dialect and run on the driver's cursor
  (its module note says which statements go through it);
- ``cache``: the compiled statements of one database, keyed by what defines them;
- ``connections``: async connections kept checked out of SQLAlchemy's pool between operations;
- ``greenlets``: the synchronous operation code run on an async driver in kept greenlets
  (imported only for async engines: the core does not need greenlet).

``SqlDatabase`` (``composite_store.sql.database``) stays outside: it is what the domains share
(the rendered tables, DDL, row values) and draws the operation boundary, one transaction per
``run``, using this package. Nothing here knows the documented schema or a table; everything
here works on a SQLAlchemy engine, connection, dialect or statement.
"""

from composite_store.sql.engine.cache import StatementCache
from composite_store.sql.engine.connections import HeldConnections
from composite_store.sql.engine.prepared import (
    IN_LIST_LIMIT,
    DriverExecutor,
    Executor,
    Prepared,
    RowValues,
    driver_cursor,
    driver_error,
    in_list,
    numbered,
    params,
)

__all__ = [
    "IN_LIST_LIMIT",
    "DriverExecutor",
    "Executor",
    "HeldConnections",
    "Prepared",
    "RowValues",
    "StatementCache",
    "driver_cursor",
    "driver_error",
    "in_list",
    "numbered",
    "params",
]
