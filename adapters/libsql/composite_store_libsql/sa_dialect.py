"""SQLAlchemy dialect ``sqlite+libsql``: the SQLite dialect on the libSQL engine's driver."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite

__all__ = ["SQLiteDialect_libsql"]


class SQLiteDialect_libsql(SQLiteDialect_pysqlite):
    """pysqlite's dialect minus what ``libsql`` lacks (``create_function``)."""

    driver = "libsql"
    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> ModuleType:
        from composite_store_libsql import dbapi

        return dbapi

    def on_connect(self) -> Any:
        # pysqlite registers a REGEXP function through create_function, which libsql does not
        # offer; composite-store never uses REGEXP.
        return None


dialect = SQLiteDialect_libsql
