"""Describe a relational store's tables as the database catalog reports them.

This is the relational half of ``Inspectable.describe_physical()``: it reflects what really exists
(SQLAlchemy's inspector, inside one ``SqlDatabase.run``) and never reads the tables the store
rendered, so the conformance suite compares the database with the documented schema rather
than the code with itself. Backends differ only through ``SqlDialect.documented_types``,
``SqlDialect.index_columns``, ``SqlDialect.index_directions`` and ``SqlDialect.variants``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import CompileError
from sqlalchemy.types import TypeEngine

from composite_store.schema import TableSpec
from composite_store.schema.physical import PhysicalColumn, PhysicalIndex, PhysicalTable
from composite_store.sql.database import SqlDatabase

__all__ = ["describe_physical"]


async def describe_physical(db: SqlDatabase, specs: Iterable[TableSpec]) -> list[PhysicalTable]:
    """Describe the tables of ``specs`` that exist in ``db``'s namespace; missing ones are
    left out."""
    wanted = tuple(specs)
    return await db.run(lambda conn: _describe(conn, db, wanted))


def _describe(
    conn: Connection, db: SqlDatabase, specs: tuple[TableSpec, ...]
) -> list[PhysicalTable]:
    inspector = sa.inspect(conn)
    existing = set(inspector.get_table_names(schema=db.schema))
    variants = db.dialect.variants()
    described = []
    for spec in specs:
        name = spec.name(db.prefix)
        if name not in existing:
            continue
        columns = tuple(
            PhysicalColumn(
                name=col["name"],
                type=_type_name(col["type"], conn),
                nullable=bool(col["nullable"]),
                holds=db.dialect.documented_types(col["type"]),
            )
            for col in inspector.get_columns(name, schema=db.schema)
        )
        pk = inspector.get_pk_constraint(name, schema=db.schema)
        indexes = [
            PhysicalIndex(
                name=index["name"] or "",
                columns=db.dialect.index_columns(conn, index),
                unique=bool(index["unique"]),
                descending=db.dialect.index_directions(conn, name, db.schema, index),
                partial=db.dialect.index_partial(conn, name, db.schema, index),
            )
            for index in inspector.get_indexes(name, schema=db.schema)
            # PostgreSQL lists a unique constraint's index too; the constraint is read below.
            if not index.get("duplicates_constraint")
        ]
        indexes.extend(
            PhysicalIndex(name=u["name"] or "", columns=tuple(u["column_names"]), unique=True)
            for u in inspector.get_unique_constraints(name, schema=db.schema)
        )
        described.append(
            PhysicalTable(
                table=spec.base_name,
                name=f"{db.schema}.{name}" if db.schema else name,
                columns=columns,
                primary_key=tuple(pk.get("constrained_columns") or ()),
                indexes=tuple(indexes),
                variants=variants,
            )
        )
    return described


def _type_name(physical: TypeEngine[Any], conn: Connection) -> str:
    try:
        return str(physical.compile(dialect=conn.dialect))
    except CompileError:  # a type the dialect reflects but cannot render (NullType)
        return type(physical).__name__
