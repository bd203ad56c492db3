"""The relational implementation: every domain written once over SQLAlchemy Core.

Backend packages (PostgreSQL, MySQL/MariaDB, Oracle, libSQL) subclass ``SqlDialect`` and bind
the shared domain classes to it; SQLite lives here as the embedded default.
"""

from composite_store.sql.database import SqlDatabase
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.domain import SqlDomain
from composite_store.sql.memory import SqlMemory
from composite_store.sql.store import SqlStore
from composite_store.sql.workflows import SqlWorkflows

__all__ = ["SqlDatabase", "SqlDialect", "SqlDomain", "SqlMemory", "SqlStore", "SqlWorkflows"]
