"""Render the documented schema as SQLAlchemy tables for one dialect, prefix and schema."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from composite_store.schema import TABLES, ColumnType, TableSpec, shadow_name, variant_nullable
from composite_store.sql.dialect import SqlDialect

__all__ = ["render_tables", "shadow"]


def shadow(name: str) -> str:
    """The shadow timestamp column of ``name`` (PostgreSQL): ``createdAt`` -> ``createdAtZ``."""
    return shadow_name(name)


def render_table(
    metadata: sa.MetaData, spec: TableSpec, dialect: SqlDialect, prefix: str, schema: str | None
) -> sa.Table:
    name = spec.name(prefix)
    columns: list[Any] = []
    relaxed = variant_nullable(spec, dialect.variants())
    for col in spec.columns:
        columns.append(
            sa.Column(
                col.name,
                dialect.column_type(col),
                nullable=(col.nullable or col.name in relaxed) and col.name not in spec.primary_key,
                primary_key=col.name in spec.primary_key,
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
    for unique in spec.unique:
        columns.append(sa.UniqueConstraint(*unique, name=dialect.unique_name(name, unique, schema)))
    columns.extend(dialect.table_constraints(spec, name))
    table = sa.Table(name, metadata, *columns, schema=schema)
    for index in spec.indexes:
        sa.Index(
            index.name(name),
            *[
                table.c[c].desc() if desc and dialect.descending_indexes else table.c[c]
                for c, desc in index.columns
            ],
            unique=index.unique,
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
