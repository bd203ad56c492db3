"""Render the documented schema as SQLAlchemy tables for one dialect, prefix and schema."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

import sqlalchemy as sa

from composite_store.schema import (
    MASTRA_FAMILIES,
    TABLES,
    ColumnType,
    Index,
    TableSpec,
    shadow_name,
    variant_nullable,
)
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.engine.cache import Recent, settings_of

__all__ = ["index_name", "layout_of", "render_tables", "shadow", "shared_tables"]

#: Layouts whose rendered tables the process keeps for the next database of the same layout.
_RENDERED_LAYOUTS = 8
_rendered: Recent[Hashable, tuple[sa.MetaData, dict[str, sa.Table]]] = Recent(_RENDERED_LAYOUTS)
_rendered_lock = threading.Lock()


def shadow(name: str) -> str:
    """The shadow timestamp column of ``name`` (PostgreSQL): ``createdAt`` -> ``createdAtZ``."""
    return shadow_name(name)


def index_name(
    dialect: SqlDialect, index: Index, table_name: str, prefix: str, schema: str | None
) -> str:
    """The physical name of documented ``index`` of table ``table_name`` on ``dialect``."""
    return dialect.index_name(index, table_name, prefix, schema)


def render_table(
    metadata: sa.MetaData, spec: TableSpec, dialect: SqlDialect, prefix: str, schema: str | None
) -> sa.Table:
    name = spec.name(prefix)
    columns: list[Any] = []
    relaxed = variant_nullable(spec, dialect.variants())
    pk_name = dialect.primary_key_name(spec, prefix, schema)
    for col in spec.columns:
        columns.append(
            sa.Column(
                col.name,
                dialect.column_type(col),
                nullable=(col.nullable or col.name in relaxed) and col.name not in spec.primary_key,
                primary_key=col.name in spec.primary_key and pk_name is None,
                autoincrement=False,
            )
        )
        if dialect.shadow_timestamps and col.type is ColumnType.TIMESTAMP:
            columns.append(
                sa.Column(
                    shadow(col.name),
                    dialect.shadow_timestamp_type(),
                    nullable=True,
                    server_default=sa.func.now(),
                )
            )
    if pk_name is not None:
        columns.append(sa.PrimaryKeyConstraint(*spec.primary_key, name=pk_name))
    unique_indexes = []
    for unique in spec.unique:
        as_index = (
            spec.unique_index_name(unique, prefix) if dialect.family in MASTRA_FAMILIES else None
        )
        if as_index is not None:
            unique_indexes.append((as_index, unique))
            continue
        columns.append(sa.UniqueConstraint(*unique, name=dialect.unique_name(name, unique, schema)))
    columns.extend(dialect.table_constraints(spec, name))
    table = sa.Table(name, metadata, *columns, schema=schema)
    for as_index, unique in unique_indexes:
        sa.Index(as_index, *[table.c[c] for c in unique], unique=True)
    for index in spec.indexes_for(dialect.family):
        options: dict[str, Any] = {}
        if index.where_null is not None:
            where = table.c[index.where_null].is_(None)
            options.update(postgresql_where=where, sqlite_where=where)
        if index.where_not_null is not None:
            where = table.c[index.where_not_null].is_not(None)
            options.update(postgresql_where=where, sqlite_where=where)
        if index.method is not None:
            options["postgresql_using"] = index.method
        sa.Index(
            index_name(dialect, index, name, prefix, schema),
            *[
                table.c[c].desc() if desc and dialect.descending_indexes else table.c[c]
                for c, desc in index.columns
            ],
            unique=index.unique,
            **options,
        )
    return table


def render_tables(
    dialect: SqlDialect, prefix: str, schema: str | None
) -> tuple[sa.MetaData, dict[str, sa.Table]]:
    """Every documented table, keyed by base name, on one ``MetaData``."""
    metadata = sa.MetaData()
    tables = {
        spec.base_name: render_table(metadata, spec, dialect, prefix, schema) for spec in TABLES
    }
    return metadata, tables


def layout_of(dialect: SqlDialect, prefix: str, schema: str | None) -> Hashable:
    """The layout of a database: what its tables are rendered from (:func:`render_tables`
    reads nothing else), which its statements are built from too. The backend's dialect as
    it is now counts by its settings, compared by value (``settings_of``)."""
    return (settings_of(dialect), prefix, schema)


def shared_tables(
    dialect: SqlDialect, prefix: str, schema: str | None
) -> tuple[sa.MetaData, dict[str, sa.Table]]:
    """:func:`render_tables`, rendered once for the databases of the same layout
    (:func:`layout_of`). Rendering every documented table took 7 of the 13 ms of opening
    and initializing an existing SQLite database (docs/benchmarks.md, "Session 2026-12-06
    (fifth)"); a store opened per request renders none.

    The tables are shared, so nothing may change them: code that needs another form of a
    table (an index built with other options, in ``sql.fixes``) changes a copy
    (``Table.to_metadata``). The 8 most recently used layouts are kept; a database keeps its
    own tables alive as long as it lives."""
    key = layout_of(dialect, prefix, schema)
    with _rendered_lock:
        found = _rendered.used(key)
    if found is not None:
        return found
    rendered = render_tables(dialect, prefix, schema)
    with _rendered_lock:
        # Another thread may have rendered the same layout meanwhile: one copy is kept.
        found = _rendered.used(key)
        return found if found is not None else _rendered.keep(key, rendered)
