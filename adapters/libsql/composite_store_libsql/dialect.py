"""``LibsqlDialect``: SQLite's hooks on the libSQL engine, plus remote URLs and JSONB reads."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement

from composite_store.errors import ConfigurationError, ValidationError
from composite_store.schema import Column, ColumnType
from composite_store.sql.dialect import PLACEMENT_OPTIONS
from composite_store.sql.sqlite import SqliteDialect, install_pragmas
from composite_store.urls import unknown_url_option

__all__ = ["LibsqlDialect", "split_url"]


def split_url(url: str) -> tuple[str | None, str | None, str]:
    """Return (local path, remote URL, auth token) of a ``libsql://`` URL.

    ``libsql:///relative.db`` and ``libsql:////absolute/path.db`` are embedded files (the
    slashes work as in SQLAlchemy's ``sqlite:///`` URLs); ``libsql://host[:port]`` is a server.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() != "libsql":
        raise ValidationError(f"not a libsql URL: {parts.scheme}://...")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    token = query.pop("authToken", query.pop("auth_token", ""))
    if query:  # nothing else reaches the driver: refused, not dropped unseen
        ours = (*PLACEMENT_OPTIONS, "authToken")
        raise ConfigurationError(unknown_url_option(next(iter(query)), ours))
    if parts.netloc:
        return None, f"libsql://{parts.netloc}{parts.path}", token
    path = parts.path[1:]
    if not path:
        raise ValidationError("libsql URL names no file: use libsql:///agent.db")
    return path, None, token


class LibsqlDialect(SqliteDialect):
    """SQLite's statements on the libSQL engine (SQLite 3.45, so JSONB is readable)."""

    name: ClassVar[str] = "libsql"
    update_returning: ClassVar[bool] = True  # SQLite 3.45 inside, whatever the stdlib's

    def create_engine(self, url: str, options: Mapping[str, Any]) -> Engine:
        import composite_store_libsql.sa_dialect  # noqa: F401 - registers sqlite+libsql
        from composite_store_libsql import dbapi

        sa.dialects.registry.register(
            "sqlite.libsql", "composite_store_libsql.sa_dialect", "SQLiteDialect_libsql"
        )
        path, remote, token = split_url(url)
        if remote is None:
            return super().create_engine(f"sqlite+libsql:///{path}", options)

        def connect() -> Any:
            return dbapi.connect(remote, auth_token=token, check_same_thread=False)

        # Remote servers manage their own journal; only the local pragmas are skipped.
        return sa.create_engine("sqlite+libsql://", creator=connect, **options)

    def embedded(self, url: str | None) -> bool:
        # docstring inherited; a caller's engine counts as a file, libSQL's usual deployment
        return url is None or split_url(url)[1] is None

    def read_only_engine(self, url: str, options: Mapping[str, Any]) -> Engine | None:
        # docstring inherited
        import composite_store_libsql.sa_dialect  # noqa: F401 - registers sqlite+libsql
        from composite_store_libsql import dbapi

        path, remote, _token = split_url(url)
        if remote is not None or path is None:
            return None  # a server: connecting creates nothing
        # The libSQL engine has no read-only open: a missing file reads as an empty in-memory
        # database instead of being created, and an existing file keeps its journal mode.
        file = Path(path)

        def connect() -> Any:
            where = str(file) if file.is_file() else ":memory:"
            return dbapi.connect(where, check_same_thread=False)

        engine = sa.create_engine("sqlite+libsql://", creator=connect, **options)
        install_pragmas(engine, wal=False, synchronous=False)
        return engine

    def read_column(self, table: sa.Table, column: Column) -> ColumnElement[Any]:
        # Mastra writes JSON columns as SQLite's binary JSONB; json() turns either form into
        # text, which the column type then decodes.
        if column.type is ColumnType.JSON:
            col = table.c[column.name]
            return sa.func.json(col, type_=col.type).label(column.name)
        return table.c[column.name]
