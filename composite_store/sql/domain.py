"""``SqlDomain``: what every relational domain shares (database ownership, DDL, row mapping)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, TypeVarTuple, overload

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.expression import Executable

from composite_store.domains.hooks import Inspectable, Migratable, StoredRows
from composite_store.errors import ValidationError
from composite_store.records.base import Record
from composite_store.records.trusted import from_row
from composite_store.schema import DEFAULT_PREFIX, TableSpec, table, tables_for
from composite_store.schema.physical import PhysicalTable
from composite_store.sql import fixes, schema_versions, transfer
from composite_store.sql.database import SqlDatabase
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.engine import Prepared, RowValues
from composite_store.sql.engine.prepared import IN_LIST_LIMIT
from composite_store.sql.introspect import describe_physical
from composite_store.sql.tables import index_name
from composite_store.sql.types import IsoTimestamp

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from composite_store.schema.drift import Difference
    from composite_store.schema.migrations import Statement, Step

__all__ = ["SqlDomain"]

R = TypeVar("R", bound=Record)
Variant = TypeVarTuple("Variant")

#: Rows per multi-row upsert statement: bounded so SQLite's 32766-parameter cap holds for the
#: widest table and the number of compiled batch shapes stays small.
UPSERT_CHUNK = 100
#: Rows a page may have to count as short (``SqlDatabase.run(short=True)``: inline on SQLite).
SHORT_PAGE = 1000


class SqlDomain(StoredRows, Migratable, Inspectable):
    """Base of the relational domains: owns or shares a ``SqlDatabase``.

    Construct it standalone (``url=`` or ``engine=``) or with the ``database=`` its store shares.
    """

    #: The dialect a backend package binds its domain classes to.
    dialect_cls: ClassVar[type[SqlDialect]] = SqlDialect
    batch_limits: ClassVar[Mapping[str, int]] = {"ids": IN_LIST_LIMIT, "rows": UPSERT_CHUNK}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.capabilities = cls.dialect_cls.capabilities
        cls.backend = cls.dialect_cls.name

    def __init__(
        self,
        *,
        url: str | None = None,
        engine: Engine | AsyncEngine | None = None,
        database: SqlDatabase | None = None,
        prefix: str = DEFAULT_PREFIX,
        schema: str | None = None,
        engine_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if database is not None:
            if url is not None or engine is not None:
                raise ValidationError("pass database= alone, or url=/engine=, not both")
            self.db = database
            self._owns_db = False
        else:
            self.db = SqlDatabase(
                self.dialect_cls(),
                url,
                engine=engine,
                prefix=prefix,
                schema=schema,
                engine_options=engine_options,
            )
            self._owns_db = True
        self.specs: tuple[TableSpec, ...] = tables_for(self.domain)

    @property
    def embedded(self) -> bool:
        # docstring inherited
        return self.db.dialect.embedded(self.db.url)

    # -- prepared statements (see sql.engine) -------------------------------------------------

    def prepared(
        self, build: Callable[[*Variant], Executable], *variant: *Variant
    ) -> Prepared:
        """The statement ``build(*variant)``, built and compiled on first use; its cache key is
        derived from ``build``'s code, ``variant`` and this domain's class
        (``StatementCache.get``), so ``build`` takes what shapes its statement as arguments."""
        return self.db.statements.get(build, *variant, scope=type(self))

    def prepared_rows(
        self, build: Callable[[*Variant, int], Executable], *variant: *Variant, rows: int
    ) -> Prepared:
        """The statement ``build(*variant, rows)`` of ``rows`` rows of values: derived from
        its one-row form ``build(*variant, 1)`` where the text allows
        (``Prepared.with_rows``: a new row count then costs about 1 us a bound value, not
        SQLAlchemy's 0.6 ms a row), else compiled."""
        one = self.prepared(build, *variant, 1)
        if rows == 1:
            return one
        return self.db.statements.rows_of(one, rows) or self.prepared(build, *variant, rows)

    @overload
    async def read_page(
        self, model: type[R], stmt: Executable, count: Executable
    ) -> tuple[list[R], int]: ...
    @overload
    async def read_page(
        self, model: type[R], stmt: Executable, count: None = None
    ) -> tuple[list[R], None]: ...
    @overload
    async def read_page(
        self, model: type[R], stmt: Executable, count: Executable | None
    ) -> tuple[list[R], int | None]: ...
    async def read_page(
        self, model: type[R], stmt: Executable, count: Executable | None = None
    ) -> tuple[list[R], int | None]:
        """The ``model`` records ``stmt`` selects and, with a ``count`` statement, its count,
        in one transaction; the records are built after it (``SqlDatabase.run``)."""

        def read(conn: Connection) -> tuple[Sequence[sa.RowMapping], int | None]:
            rows = conn.execute(stmt).mappings().all()
            return rows, (None if count is None else int(conn.execute(count).scalar_one()))

        rows, total = await self.db.run(read)
        return [from_row(model, r) for r in rows], total

    async def read_counted(
        self,
        page: Prepared,
        count: Prepared,
        values: Mapping[str, Any],
        *,
        counted: bool,
        short: bool,
    ) -> tuple[list[Any], int | None]:
        """The driver rows of the page statement ``page`` and, when ``counted`` (``page`` then
        carries the total as its last column: ``sql.totals``), the total: the first row's, or
        for a page with no row (past the end, or nothing matched) the ``count`` statement's,
        run alone. Each statement is an operation of its own (``SqlDatabase.fetch``):
        in autocommit they were separate transactions in one operation too."""
        rows = await self.db.fetch(page, values, short=short)
        if not counted:
            return rows, None
        if rows:
            return rows, int(rows[0][-1])
        [(total,)] = await self.db.fetch(count, values)
        return rows, int(total)

    def select_all(self, base: str) -> sa.Select[Any]:
        """``SELECT <documented columns> FROM base``, each read as the dialect reads it."""
        return sa.select(*self.db.readable(self.tables[base], table(base)))

    def index_name(self, base: str, suffix: str) -> str:
        """The physical name of documented index ``suffix`` of table ``base`` in this store."""
        [index] = [i for i in table(base).indexes if i.suffix == suffix]
        return index_name(
            self.db.dialect, index, self.tables[base].name, self.db.prefix, self.db.schema
        )

    def select_by(self, base: str, *columns: str, lock: bool = False) -> Prepared:
        """``SELECT <documented columns> FROM base WHERE c1 = :c1 AND ...`` (FOR UPDATE where
        ``lock`` and the dialect locks rows)."""
        shape = ("select_by", type(self), base, columns, lock)
        shapes = self.db.statements.by_shape
        found = shapes.get(shape)
        if found is not None:
            return found

        def build(base: str, columns: tuple[str, ...], lock: bool) -> Executable:
            tbl = self.tables[base]
            stmt = self.select_all(base).where(*(tbl.c[c] == sa.bindparam(c) for c in columns))
            if lock and self.db.dialect.supports_for_update:
                stmt = stmt.with_for_update()
            return stmt

        found = shapes[shape] = self.prepared(build, base, columns, lock)
        return found

    def upsert(
        self,
        base: str,
        rows: Sequence[Mapping[str, Any]],
        key: Sequence[str],
        keep: Sequence[str] = (),
    ) -> list[tuple[Prepared, RowValues]]:
        """Multi-row upserts of ``rows`` (all with the same columns), in chunks of at most
        ``UPSERT_CHUNK`` rows: (statement, bind values) pairs to execute in one transaction.

        Columns in ``key`` and ``keep`` are not overwritten when the row exists.
        """
        columns = tuple(rows[0])
        keys = tuple(key)
        if len(rows) == 1:
            # One row (a thread, a run, a resource): its statement by shape, one lookup
            # instead of deriving its variant on every call.
            shape = ("upsert", type(self), base, columns, keys, tuple(keep))
            plans = self.db.statements.by_shape
            prepared = plans.get(shape)
            if prepared is None:
                [(prepared, values)] = self._upsert_chunks(base, rows, columns, keys, keep)
                plans[shape] = prepared
                return [(prepared, values)]
            return [(prepared, RowValues(rows))]
        return self._upsert_chunks(base, rows, columns, keys, keep)

    async def save_rows(
        self,
        base: str,
        rows: Sequence[Mapping[str, Any]],
        key: Sequence[str],
        keep: Sequence[str] = (),
    ) -> None:
        """Upsert ``rows`` as one operation (:meth:`upsert`'s statements): one chunk is one
        statement, atomic by itself, run as an operation of its own (``SqlDatabase.execute``:
        one round trip, inline on SQLite); several chunks run in one transaction."""
        stmts = self.upsert(base, rows, key, keep)
        if len(stmts) == 1:
            [(stmt, values)] = stmts
            await self.db.execute(stmt, values)
            return

        def save(conn: Connection) -> None:
            for stmt, values in stmts:
                stmt.execute(conn, values)

        await self.db.run(save, write=True)

    def _upsert_chunks(
        self,
        base: str,
        rows: Sequence[Mapping[str, Any]],
        columns: tuple[str, ...],
        keys: tuple[str, ...],
        keep: Sequence[str],
    ) -> list[tuple[Prepared, RowValues]]:
        """:meth:`upsert`'s statements and values, derived from ``columns`` for every chunk."""
        update = tuple(c for c in columns if c not in keys and c not in keep)

        def build(
            base: str,
            columns: tuple[str, ...],
            key: tuple[str, ...],
            update: tuple[str, ...],
            n: int,
        ) -> Executable:
            tbl = self.tables[base]
            # Typed binds: SQLAlchemy types only the first row of a multi-row VALUES.
            bound = [
                {c: sa.bindparam(f"{c}__{i}", type_=tbl.c[c].type) for c in columns}
                for i in range(n)
            ]
            return self.db.dialect.upsert(tbl, bound, key, update)

        result = []
        for start in range(0, len(rows), UPSERT_CHUNK):
            chunk = rows[start : start + UPSERT_CHUNK]
            prepared = self.prepared_rows(build, base, columns, keys, update, rows=len(chunk))
            # Bound row by row (RowValues: the statement's binds are <column>__<i>).
            result.append((prepared, RowValues(chunk)))
        return result

    def set_values(self, base: str, values: Mapping[str, str]) -> dict[str, Any]:
        """``{column: typed bindparam}`` for an INSERT or UPDATE: ``values`` maps each column
        to the bind name that carries its value."""
        tbl = self.tables[base]
        return {c: sa.bindparam(name, type_=tbl.c[c].type) for c, name in values.items()}

    @property
    def tables(self) -> Mapping[str, sa.Table]:
        """Every documented table of the database, rendered, by base name (``threads``)."""
        return self.db.tables

    async def _init(self) -> None:
        made = await self.db.create(self.specs)
        self._created_by_init = {spec.base_name for spec in self.specs} <= made

    async def _clear(self) -> None:
        await self.db.clear(self.specs)

    async def _close(self) -> None:
        if self._owns_db:
            await self.db.dispose()

    async def _open(self) -> None:
        # ``attach``: connect without creating anything (no SQLite file, no WAL switch).
        self.db.attach_read_only()

    async def _ping(self) -> None:
        await self.db.ping()

    def describe(self) -> str:
        return f"{self.backend} {self.db.describe()}"

    async def describe_physical(self) -> list[PhysicalTable]:
        # docstring inherited
        self._check()
        return await describe_physical(self.db, self.specs)

    # -- export and import, schema versions (sql.transfer, sql.schema_versions) ---------------

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        return await transfer.export_rows(self, table, cursor, limit)

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        return await transfer.fetch_rows(self, table, keys)

    async def _import(self, table: str, records: list[Record]) -> None:
        # docstring inherited
        await transfer.import_rows(self, table, records)

    row_tables = transfer.ROW_TABLES

    @property
    def timestamp_text(self) -> bool:
        # docstring inherited
        return isinstance(self.db.dialect.timestamp_type(), IsoTimestamp)

    async def _export_stored(
        self, table: str, cursor: str | None, limit: int, timestamp_text: bool
    ) -> tuple[list[tuple[Any, ...]], str | None]:
        # docstring inherited
        return await transfer.export_stored(self, table, cursor, limit, timestamp_text)

    async def _import_stored(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        # docstring inherited
        await transfer.import_stored(self, table, rows)

    async def _count(self, table: str) -> int:
        # docstring inherited
        return await transfer.count_rows(self, table)

    async def _read_schema_version(self) -> int | None:
        # docstring inherited
        return await schema_versions.read_version(self.db, self.domain)

    async def _version_at_init(self) -> int | None:
        # docstring inherited
        return await schema_versions.version_at_init(self.db, self.domain)

    async def _write_schema_version(self, version: int) -> None:
        # docstring inherited
        await schema_versions.write_version(self.db, self.domain, version)

    async def _migration_plan(self, step: Step) -> list[Statement]:
        # docstring inherited
        return await schema_versions.migration_plan(self.db, step)

    def fix_statement(self, difference: Difference) -> str | None:
        # docstring inherited
        return fixes.fix_statement(self.db, difference)

    async def read_raw(self, table_name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        # docstring inherited
        self._check()
        spec = table(table_name)
        tbl = self.db.tables[table_name]
        unknown = set(key) - set(spec.column_names)
        if unknown:
            raise ValidationError(f"unknown columns for {table_name}: {sorted(unknown)}")

        def read(conn: Connection) -> dict[str, Any] | None:
            # Untyped columns: values come back exactly as the driver returns them.
            untyped = sa.table(
                tbl.name, *[sa.column(c.name) for c in tbl.columns], schema=tbl.schema
            )
            raw = sa.select(untyped)
            for name, value in key.items():
                raw = raw.where(untyped.c[name] == value)
            row = conn.execute(raw).mappings().first()
            return dict(row) if row is not None else None

        return await self.db.run(read)
