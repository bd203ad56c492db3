"""The DDL that removes one schema difference (``composite_store.schema.drift``) from a SQL
database.

``composite-store inspect`` prints these next to each difference. Statements are compiled from
the store's own rendered tables, so names, types and quoting are the dialect's; what only some
databases can do (change a column in place) goes through ``SqlDialect`` hooks.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.schema import CreateIndex, CreateTable, DropIndex

from composite_store.schema.drift import Difference, Kind
from composite_store.sql.database import SqlDatabase
from composite_store.sql.tables import index_name

__all__ = ["fix_statement"]

#: What replaces an in-place change where ``ALTER TABLE`` cannot make it (SQLite).
REBUILD = (
    "-- {backend} cannot change {what} of an existing table: open a store on a fresh file and "
    "copy the data into it: composite-store copy SRC_URL DST_URL"
)


def fix_statement(db: SqlDatabase, difference: Difference) -> str:
    """The statement(s) removing ``difference`` from ``db``, ``;``-separated."""
    dialect = db.engine.dialect
    prep = dialect.identifier_preparer
    tbl = db.tables[difference.spec.base_name]
    name = prep.format_table(tbl)

    def compiled(ddl: sa.schema.ExecutableDDLElement) -> str:
        return str(ddl.compile(dialect=dialect)).strip()

    def column_sql(column: sa.Column[object]) -> tuple[str, str]:
        return prep.format_column(column), column.type.compile(dialect=dialect)

    def rebuild(what: str) -> str:
        return REBUILD.format(backend=db.dialect.name, what=what)

    kind = difference.kind
    if kind is Kind.MISSING_TABLE:
        return "; ".join(
            [compiled(CreateTable(tbl)), *(compiled(CreateIndex(ix)) for ix in tbl.indexes)]
        )
    if kind is Kind.MISSING_COLUMN:
        assert difference.column is not None
        col = tbl.c[difference.column.name]
        quoted, type_sql = column_sql(col)
        return db.dialect.add_column(name, quoted, type_sql, bool(col.nullable))
    if kind in (Kind.COLUMN_TYPE, Kind.NULLABILITY):
        assert difference.column is not None
        if not db.dialect.alter_table_in_place:
            return rebuild(f"the type or nullability of {difference.column.name}")
        col = tbl.c[difference.column.name]
        quoted, type_sql = column_sql(col)
        return db.dialect.alter_column(
            name, quoted, type_sql, bool(col.nullable), retype=kind is Kind.COLUMN_TYPE
        )
    if kind is Kind.EXTRA_COLUMN:
        quoted = prep.quote(difference.name or "")
        return f"ALTER TABLE {name} DROP COLUMN {quoted}  -- deletes the column's values"
    if kind is Kind.PRIMARY_KEY:
        if not db.dialect.alter_table_in_place:
            return rebuild("the primary key")
        columns = ", ".join(prep.quote(c) for c in difference.spec.primary_key)
        return f"ALTER TABLE {name} ADD PRIMARY KEY ({columns})"
    # Indexes: compiled on a copy of the table, so the store's own tables stay as rendered,
    # with the options for building on a table in use (PostgreSQL: CONCURRENTLY).
    live = tbl.to_metadata(sa.MetaData())
    if kind is Kind.UNIQUE_KEY:
        assert difference.key is not None
        unique_name = db.dialect.unique_name(tbl.name, difference.key, db.schema)
        index = sa.Index(unique_name, *(live.c[c] for c in difference.key), unique=True)
    else:
        assert difference.index is not None
        # The index this family creates for the documented one (Mastra's, where it stands
        # for it: ``TableSpec.standing_for``).
        created = difference.spec.standing_for(difference.index, db.dialect.family)
        wanted = index_name(db.dialect, created, tbl.name, db.prefix, db.schema)
        index = next(i for i in live.indexes if i.name == wanted)
    for option, value in db.dialect.live_index_options.items():
        index.dialect_kwargs[option] = value
    if kind is Kind.INDEX_SHAPE:
        return f"{compiled(DropIndex(index))}; {compiled(CreateIndex(index))}"
    return compiled(CreateIndex(index))
