"""``SqlDomain``: what every relational domain shares (database ownership, DDL, row mapping)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.engine import Connection, Engine

from composite_store.domains.base import Domain, PhysicalTable
from composite_store.errors import ValidationError
from composite_store.schema import DEFAULT_PREFIX, TableSpec, table, tables_for
from composite_store.sql.database import SqlDatabase
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.introspect import describe_physical

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["SqlDomain", "from_row"]

M = TypeVar("M", bound=BaseModel)


@cache
def _field_sources(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(attribute, stored name) pairs of a record model."""
    return tuple(
        (name, info.serialization_alias or name) for name, info in model.model_fields.items()
    )


def from_row(model: type[M], row: Mapping[Any, Any], **overrides: Any) -> M:
    """Build a record from a trusted stored row without re-validating it."""
    values = {attr: row[src] for attr, src in _field_sources(model) if src in row}
    values.update(overrides)
    return model.model_construct(**values)


class SqlDomain(Domain):
    """Base of the relational domains: owns or shares a ``SqlDatabase``.

    Construct it standalone (``url=`` or ``engine=``) or with the ``database=`` its store shares.
    """

    #: The dialect a backend package binds its domain classes to.
    dialect_cls: ClassVar[type[SqlDialect]] = SqlDialect

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

    def t(self, base_name: str) -> sa.Table:
        return self.db.tables[base_name]

    async def _init(self) -> None:
        await self.db.create(self.specs)

    async def _clear(self) -> None:
        await self.db.clear(self.specs)

    async def _close(self) -> None:
        if self._owns_db:
            await self.db.dispose()

    async def _ping(self) -> None:
        await self.db.ping()

    def describe(self) -> str:
        return f"{self.backend} {self.db.describe()}"

    async def describe_physical(self) -> list[PhysicalTable]:
        # docstring inherited
        self._check()
        return await describe_physical(self.db, self.specs)

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
